import type { SnapshotRecord } from '../../src/wire/snapshot-record.js';
import { createHash, randomUUID } from 'node:crypto';
import type { Kafka, Producer } from 'kafkajs';
import type pg from 'pg';
import type { Config } from '../../src/config.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { pipelineTopicSpecs, topicNames, type TopicNames } from '../../src/wire/topics.js';
import type { Running } from '../../src/lifecycle.js';
import { createLogger, type Logger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createRegistry, type Registry } from '../../src/registry/registry.js';
import { startSink, type SinkOptions } from '../../src/sink/sink.js';
import { readDeadLetter, type StoredDeadLetter } from '../../src/wire/dead-letter.js';

/**
 * What the sink's integration tests share: a migrated private schema, private topics, the
 * snapshot schema and a minimal webhook schema (only the four fields the sink relies on; the
 * sink decodes with the writer schema, so the ingress's fuller schema works the same), and
 * producers that frame records the way the enricher and the ingress do.
 */
export interface SinkHarness {
  config: Config;
  names: TopicNames;
  log: Logger;
  pool: pg.Pool;
  kafka: Kafka;
  registry: Registry;
  schema: string;
  /** `<schema>.<name>`, quoted. */
  table(name: string): string;
  produceSnapshots(records: SnapshotRecord[]): Promise<void>;
  produceWebhooks(records: WebhookRecord[]): Promise<void>;
  produceRaw(topic: string, messages: { key: string; value: Buffer }[]): Promise<void>;
  startSink(options?: SinkOptions): Promise<Running & { metrics: ReturnType<typeof createMetrics> }>;
  count(sql: string): Promise<number>;
  /**
   * Rows of `a.<relation>` and `b.<relation>` that differ (both directions, duplicates counted),
   * over every column but `loaded_at`: when a row landed describes the load, not the history.
   */
  rowDifference(a: string, b: string, relation: string): Promise<number>;
  /**
   * Every view of schema `a`, the heads table, and each `<t>_as_of` at several moments of the
   * history, compared with `b` as rowDifference does: one `name: n` line per relation that differs.
   */
  analystDifferences(a: string, b: string): Promise<string[]>;
  close(): Promise<void>;
}

export type { SnapshotRecord } from '../../src/wire/snapshot-record.js';

export interface WebhookRecord {
  event_id: string;
  event: string;
  received_at: number;
  body: string;
}

export const MINIMAL_WEBHOOK_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'Webhook',
  namespace: 'test.sink',
  fields: [
    { name: 'event_id', type: 'string' },
    { name: 'event', type: 'string' },
    { name: 'received_at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'body', type: 'string' },
  ],
});

export function contentHash(body: string | null): string {
  return body === null ? 'deleted' : createHash('sha256').update(body).digest('hex');
}

/** A snapshot record; `body` an object (serialised) or null for a deletion. */
export function snapshot(type: string, id: string, version: number, body: object | null, extra: Partial<SnapshotRecord> = {}): SnapshotRecord {
  const text = body === null ? null : JSON.stringify(body);
  return {
    resource_type: type,
    resource_id: id,
    version,
    fetched_at: Date.UTC(2025, 0, 1) + version * 60_000,
    deleted: body === null,
    content_hash: contentHash(text),
    body: text,
    source_event_ids: [],
    source_events: [],
    sources: [],
    ...extra,
  };
}

export function webhook(event: string, body: object, receivedAt = Date.now()): WebhookRecord {
  return { event_id: randomUUID(), event, received_at: receivedAt, body: JSON.stringify({ Event: event, ...body }) };
}

export async function createSinkHarness(config: Config): Promise<SinkHarness> {
  const log = createLogger(config.logLevel);
  const names = topicNames(config.topicPrefix);
  const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'sink-test', log });
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'sink-test', log });
  const registry = createRegistry(config.schemaRegistryUrl);
  const schema = config.databaseSchema;
  await migrate(pool, { schema, log });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, Object.values(pipelineTopicSpecs(names)));
  await admin.disconnect();
  const snapshotSchemaId = await registry.registerFile(`${names.snapshots}-value`, 'resource-snapshot.avsc');
  const webhookSchemaId = await registry.register(`${names.webhooks}-value`, MINIMAL_WEBHOOK_SCHEMA);
  let producer: Producer | undefined;
  const connected = async () => {
    if (!producer) {
      producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner });
      await producer.connect();
    }
    return producer;
  };
  const sinks: Running[] = [];
  return {
    config,
    names,
    log,
    pool,
    kafka,
    registry,
    schema,
    table: (name) => `${quoteIdent(schema)}.${quoteIdent(name)}`,
    async produceSnapshots(records) {
      const messages = await Promise.all(records.map(async (r) => ({ key: `${r.resource_type}:${r.resource_id}`, value: await registry.encode(snapshotSchemaId, r) })));
      await (await connected()).send({ topic: names.snapshots, acks: -1, messages });
    },
    async produceWebhooks(records) {
      const messages = await Promise.all(records.map(async (r) => ({ key: r.event_id, value: await registry.encode(webhookSchemaId, r) })));
      await (await connected()).send({ topic: names.webhooks, acks: -1, messages });
    },
    async produceRaw(topic, messages) {
      await (await connected()).send({ topic, acks: -1, messages });
    },
    async startSink(options) {
      const metrics = createMetrics();
      const sink = await startSink({ log, metrics, health: createHealth() }, config, options);
      sinks.push(sink);
      return { stop: () => sink.stop(), metrics };
    },
    async rowDifference(a, b, relation) {
      const { rows } = await pool.query<{ c: string }>(
        `SELECT quote_ident(column_name) AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name <> 'loaded_at' ORDER BY ordinal_position`,
        [a.replace(/^"|"$/g, ''), relation],
      );
      const cols = rows.map((r) => r.c).join(', ');
      const sql = `SELECT count(*) n FROM ((SELECT ${cols} FROM ${a}.${relation} EXCEPT ALL SELECT ${cols} FROM ${b}.${relation}) UNION ALL (SELECT ${cols} FROM ${b}.${relation} EXCEPT ALL SELECT ${cols} FROM ${a}.${relation})) d`;
      return Number((await pool.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
    },
    async analystDifferences(a, b) {
      const differ = async (relation: string, from: (schema: string) => string) => {
        const { rows } = await pool.query<{ c: string }>(
          `SELECT quote_ident(column_name) AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name <> 'loaded_at' ORDER BY ordinal_position`,
          [a.replace(/^"|"$/g, ''), relation],
        );
        const cols = rows.map((r) => r.c).join(', ');
        const sql = `SELECT count(*) n FROM ((SELECT ${cols} FROM ${from(a)} EXCEPT ALL SELECT ${cols} FROM ${from(b)}) UNION ALL (SELECT ${cols} FROM ${from(b)} EXCEPT ALL SELECT ${cols} FROM ${from(a)})) d`;
        return Number((await pool.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
      };
      const plain = a.replace(/^"|"$/g, '');
      // pipeline_health counts by loaded_at: it describes the load, not the history, so a rebuild changes it (like loaded_at).
      const views = (await pool.query<{ v: string }>(`SELECT table_name AS v FROM information_schema.views WHERE table_schema = $1 ORDER BY 1`, [plain])).rows
        .map((r) => r.v)
        .filter((v) => v !== 'pipeline_health');
      const problems: string[] = [];
      for (const relation of [...views, 'version_facts', 'current_facts']) {
        const n = await differ(relation, (schema) => `${schema}.${quoteIdent(relation)}`);
        if (n > 0) problems.push(`${relation}: ${n}`);
      }
      const moments = (
        await pool.query<{ at: Date }>(
          `SELECT DISTINCT unnest(ARRAY[min(fetched_at), percentile_disc(0.3) WITHIN GROUP (ORDER BY fetched_at), percentile_disc(0.7) WITHIN GROUP (ORDER BY fetched_at), max(fetched_at), now()]) AS at FROM ${a}.resource_versions`,
        )
      ).rows.map((r) => r.at.toISOString());
      const functions = views.filter((v) => v.endsWith('_current')).map((v) => v.replace(/_current$/, '_as_of'));
      for (const fn of functions) {
        for (const at of moments) {
          const n = await differ(fn.replace(/_as_of$/, '_current'), (schema) => `${schema}.${quoteIdent(fn)}('${at}')`);
          if (n > 0) problems.push(`${fn}('${at}'): ${n}`);
        }
      }
      for (const at of moments) {
        const counts = (schema: string) => `SELECT status, plan_id, contracts FROM ${schema}.contract_counts_as_of('${at}')`;
        const sql = `SELECT count(*) n FROM ((${counts(a)} EXCEPT ALL ${counts(b)}) UNION ALL (${counts(b)} EXCEPT ALL ${counts(a)})) d`;
        const n = Number((await pool.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
        if (n > 0) problems.push(`contract_counts_as_of('${at}'): ${n}`);
      }
      return problems;
    },
    async count(sql) {
      const { rows } = await pool.query<{ n: string }>(sql);
      return Number(rows[0]?.n ?? 0);
    },
    async close() {
      await Promise.all(sinks.map((s) => s.stop()));
      await producer?.disconnect();
      await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      await pool.end();
    },
  };
}

/** The value of one counter (summed over its labels, or for the given labels). */
export async function metricValue(metrics: ReturnType<typeof createMetrics>, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = metrics.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((sum, v) => sum + v.value, 0);
}

/** Reads a DLQ topic from the beginning until `count` dead letters arrived (or the wait times out). */
export async function readDeadLetters(h: SinkHarness, topic: string, count: number): Promise<StoredDeadLetter[]> {
  const { waitFor } = await import('../helpers/wait-for.js');
  const letters: StoredDeadLetter[] = [];
  const consumer = h.kafka.consumer({ groupId: `${h.config.topicPrefix}.dlq-reader.${randomUUID()}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        letters.push(await readDeadLetter({ topic, partition, offset: message.offset }, message, (v) => h.registry.decode(v)));
      },
    });
    await waitFor(() => letters.length >= count, { what: `${count} dead letters in ${topic}`, timeoutMs: 30_000 });
  } finally {
    await consumer.disconnect();
  }
  return letters;
}
