#!/usr/bin/env node
// Sink throughput benchmark. Not a test: it measures and prints, it asserts nothing.
//
//   npm run bench:sink -- [--records N] [--batch-bytes B] [--keep]
//
// 1. puts N snapshot records (default 1,000,000; bodies of about 2 KB, the eight resource types,
//    four versions per resource) into a fresh <prefix>.snapshots topic;
// 2. loads them into an empty warehouse through the real sink (startSink, as `billing-loader sink`);
// 3. loads the same number of rows, same sizes, with plain COPY statements into an identical,
//    empty table (same migrations: same indexes and triggers), timing only the COPYs: the limit
//    for one connection; then again on 3 connections at once (the sink writes 3 partitions at
//    once), the limit for a writer allowed that many;
// 4. rebuilds the sink's warehouse from the log (`replay --rebuild`'s code path) and times it.
// Uses the services of the environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DATABASE_URL; the
// local stack by default) with a private topic prefix and schemas, dropped at the end.
import { randomBytes, createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { configWithLocalStack } from '../../dist/cli/cli-config.js';
import { migrate } from '../../dist/db/migrate.js';
import { createPool, quoteIdent } from '../../dist/db/pool.js';
import { createHealth } from '../../dist/health.js';
import { createKafka, defaultPartitioner } from '../../dist/kafka/client.js';
import { ensureTopics } from '../../dist/kafka/topics.js';
import { pipelineTopicSpecs, topicNames } from '../../dist/wire/topics.js';
import { createLogger } from '../../dist/log.js';
import { createMetrics } from '../../dist/metrics.js';
import { createRegistry } from '../../dist/registry/registry.js';
import { snapshotLine } from '../../dist/sink/batch-writer.js';
import { rebuildWarehouse } from '../../dist/sink/rebuild.js';
import { sinkGroupId, startSink } from '../../dist/sink/sink.js';
import { copyFrom } from '../../dist/warehouse/copy-from.js';

const { values: args } = parseArgs({ options: { records: { type: 'string', default: '1000000' }, 'batch-bytes': { type: 'string' }, keep: { type: 'boolean', default: false } } });
const N = Number(args.records);
if (!Number.isInteger(N) || N < 1) throw new Error('--records: expected a positive integer');
const VERSIONS = 4;
const TYPES = ['Contract', 'Customer', 'Order', 'Invoice', 'InvoiceDraft', 'Dunning', 'PaymentTransaction', 'PaymentEscalationProcess'];
const say = (line) => process.stderr.write(`bench: ${line}\n`);
const rate = (n, ms) => Math.round(n / (ms / 1000));

const suffix = randomBytes(3).toString('hex');
const config = configWithLocalStack({ ...process.env, TOPIC_PREFIX: `bench_${suffix}`, DATABASE_SCHEMA: `bench_${suffix}`, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
const copySchema = `bench_${suffix}_copy`;
const log = createLogger(config.logLevel);
const names = topicNames(config.topicPrefix);
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'bench-sink', log });
const registry = createRegistry(config.schemaRegistryUrl);
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'bench-sink', log, max: 6 });

/** Record i: resource i % R, version floor(i / R) + 1, so each resource's versions are in order. */
const resources = Math.max(1, Math.ceil(N / VERSIONS));
const pad = (s, n) => s.padEnd(n, '.');
function body(type, id, version) {
  const b = {
    Id: id,
    CustomerId: `cust-${(Number(id.slice(2)) * 7919) % 50000}`,
    PlanVariantId: `plan-${version % 3}`,
    Status: version % 2 ? 'Active' : 'InTrial',
    LastBillingDate: new Date(Date.UTC(2025, 0, 1 + version)).toISOString(),
    NextBillingDate: new Date(Date.UTC(2025, 1, 1 + version)).toISOString(),
    Currency: 'EUR',
    Version: version,
    Phases: Array.from({ length: 3 }, (_, k) => ({ Type: k ? 'Normal' : 'Trial', StartDate: new Date(Date.UTC(2024, k, 1)).toISOString(), PlanVariantId: `plan-${k}`, Quantity: k + version, Inheritable: true })),
    PaymentBearer: { Type: 'CreditCard', CardType: 'Visa', Holder: 'Jane Q. Customer', Last4: String(1000 + (version % 9000)), ExpiryMonth: 12, ExpiryYear: 2030, Country: 'DE' },
    Address: { Street: 'Musterstraße', HouseNumber: '42a', PostalCode: '80331', City: 'München', Country: 'DE', AddressLine1: 'c/o Billing Department' },
    CustomFields: { source: 'bench', segment: `s-${version}`, note: 'quoted "text" and a back\\slash' },
    ComponentSubscriptions: Array.from({ length: 4 }, (_, k) => ({ ComponentId: `comp-${k}`, Quantity: k * version, StartDate: '2025-01-01T00:00:00Z', Memo: pad(`memo ${k}`, 60) })),
    ResourceType: type,
  };
  const text = JSON.stringify(b);
  return text.length < 2048 ? JSON.stringify({ ...b, Notes: pad('n', 2048 - text.length - 12) }) : text;
}
function record(i) {
  const r = i % resources;
  const type = TYPES[r % TYPES.length];
  const id = `r-${r}`;
  const version = Math.floor(i / resources) + 1;
  const text = body(type, id, version);
  return {
    resource_type: type,
    resource_id: id,
    version,
    fetched_at: Date.UTC(2025, 0, 1) + i,
    deleted: false,
    content_hash: createHash('sha256').update(text).digest('hex'),
    body: text,
    source_event_ids: [randomUUIDish(i)],
    source_events: ['ContractChanged'],
    sources: [],
  };
}
function randomUUIDish(i) {
  const h = createHash('md5').update(String(i)).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

async function produce() {
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, Object.values(pipelineTopicSpecs(names)));
  await admin.disconnect();
  const schemaId = await registry.registerFile(`${names.snapshots}-value`, 'resource-snapshot.avsc');
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner });
  await producer.connect();
  const started = Date.now();
  const chunk = 2000;
  for (let i = 0; i < N; i += chunk) {
    const messages = [];
    for (let j = i; j < Math.min(N, i + chunk); j++) {
      const r = record(j);
      messages.push({ key: `${r.resource_type}:${r.resource_id}`, value: await registry.encode(schemaId, r) });
    }
    await producer.send({ topic: names.snapshots, acks: -1, messages });
    if ((i / chunk) % 50 === 0) say(`produced ${i + messages.length}/${N}`);
  }
  await producer.disconnect();
  return Date.now() - started;
}

async function rowsIn(schema) {
  const { rows } = await pool.query(`SELECT count(*)::bigint AS n FROM ${quoteIdent(schema)}.resource_versions`);
  return Number(rows[0].n);
}

async function loadThroughSink() {
  await migrate(pool, { schema: config.databaseSchema, log });
  const metrics = createMetrics();
  const written = async () => (await metrics.getSingleMetric('billing_loader_sink_rows_written_total')?.get())?.values.reduce((s, v) => s + v.value, 0) ?? 0;
  const started = Date.now();
  const options = args['batch-bytes'] ? { maxBytesPerPartition: Number(args['batch-bytes']) } : {};
  const sink = await startSink({ log, metrics, health: createHealth() }, config, options);
  let firstRowAt;
  let last = 0;
  for (;;) {
    const n = await written();
    if (n > 0 && firstRowAt === undefined) firstRowAt = Date.now();
    if (n >= N) break;
    if (n - last >= 100_000 || (n > 0 && last === 0)) {
      say(`sink wrote ${n}/${N}`);
      last = n;
    }
    await sleep(100);
  }
  const done = Date.now();
  await sink.stop();
  const rows = await rowsIn(config.databaseSchema);
  if (rows !== N) throw new Error(`sink wrote ${rows} rows, expected ${N}`);
  return { totalMs: done - started, steadyMs: done - firstRowAt, joinMs: firstRowAt - started };
}

/** COPY text of records [from, to). */
function copyText(from, to) {
  let text = '';
  for (let j = from; j < to; j++) {
    const r = record(j);
    text += snapshotLine({
      resourceType: r.resource_type, resourceId: r.resource_id, version: r.version, fetchedAtMs: r.fetched_at, deleted: false, body: r.body,
      contentHash: r.content_hash, sourceEventIds: r.source_event_ids, sourceEvents: r.source_events, customerId: r.resource_type === 'Contract' ? 'c' : null,
      coordinates: { topic: names.snapshots, partition: j % 6, offset: String(j) },
    });
  }
  return text;
}

const COPY_SQL = (schema) => `COPY ${quoteIdent(schema)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset) FROM STDIN`;
const PER_COPY = 10_000;

/** One connection, one COPY of 10,000 rows after another; only the COPYs are timed. */
async function loadWithCopy() {
  await migrate(pool, { schema: copySchema, log });
  const client = await pool.connect();
  let copyMs = 0;
  try {
    for (let i = 0; i < N; i += PER_COPY) {
      const text = copyText(i, Math.min(N, i + PER_COPY));
      const t = performance.now();
      await copyFrom(client, COPY_SQL(copySchema), text);
      copyMs += performance.now() - t;
      if ((i / PER_COPY) % 20 === 0) say(`COPY ${Math.min(N, i + PER_COPY)}/${N}`);
    }
  } finally {
    client.release();
  }
  const rows = await rowsIn(copySchema);
  if (rows !== N) throw new Error(`COPY wrote ${rows} rows, expected ${N}`);
  return { copyMs };
}

/**
 * As many connections as the sink writes partitions at once (3), each COPYing every third chunk:
 * the limit for a writer that may use that many connections. Wall time, text building included
 * (it overlaps the other connections' COPYs, as the sink's decoding does).
 */
async function loadWithParallelCopy(streams) {
  const schema = `${copySchema}_par`;
  extra.push(schema);
  await migrate(pool, { schema, log });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: streams }, async (_, s) => {
      const client = await pool.connect();
      try {
        for (let i = s * PER_COPY; i < N; i += streams * PER_COPY) await copyFrom(client, COPY_SQL(schema), copyText(i, Math.min(N, i + PER_COPY)));
      } finally {
        client.release();
      }
    }),
  );
  const copyMs = performance.now() - started;
  const rows = await rowsIn(schema);
  if (rows !== N) throw new Error(`parallel COPY wrote ${rows} rows, expected ${N}`);
  return { copyMs };
}

async function timeRebuild() {
  const started = Date.now();
  const report = await rebuildWarehouse({ kafka, registry, pool, log, progress: say }, config, { sinkGroupId: sinkGroupId(config), progressEveryMs: 15_000 });
  return { rebuildMs: Date.now() - started, report };
}

async function cleanup(extra) {
  if (args.keep) return;
  for (const s of [config.databaseSchema, copySchema, ...extra]) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(s)} CASCADE`);
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: Object.values(names) }).catch(() => undefined);
  await admin.deleteGroups([sinkGroupId(config)]).catch(() => undefined);
  await admin.disconnect();
}

const extra = [];
try {
  say(`${N} records, ${resources} resources x up to ${VERSIONS} versions, body ~${record(0).body.length} bytes; prefix ${config.topicPrefix}`);
  const produceMs = await produce();
  say(`produced in ${(produceMs / 1000).toFixed(1)} s`);
  const sink = await loadThroughSink();
  say(`sink: ${(sink.totalMs / 1000).toFixed(1)} s (group join ${(sink.joinMs / 1000).toFixed(1)} s)`);
  const copy = await loadWithCopy();
  say(`COPY: ${(copy.copyMs / 1000).toFixed(1)} s`);
  const parallelCopy = await loadWithParallelCopy(3);
  say(`COPY on 3 connections: ${(parallelCopy.copyMs / 1000).toFixed(1)} s`);
  const rebuild = await timeRebuild();
  if (rebuild.report.replacedSchema) extra.push(rebuild.report.replacedSchema);
  const result = {
    records: N,
    bodyBytes: record(0).body.length,
    produce: { seconds: +(produceMs / 1000).toFixed(1), recordsPerSecond: rate(N, produceMs) },
    sink: { seconds: +(sink.totalMs / 1000).toFixed(1), rowsPerSecond: rate(N, sink.totalMs), steadyRowsPerSecond: rate(N, sink.steadyMs), groupJoinSeconds: +(sink.joinMs / 1000).toFixed(1) },
    copy: { seconds: +(copy.copyMs / 1000).toFixed(1), rowsPerSecond: rate(N, copy.copyMs) },
    ratio: +(copy.copyMs / sink.totalMs).toFixed(2),
    steadyRatio: +(copy.copyMs / sink.steadyMs).toFixed(2),
    parallelCopy: { connections: 3, seconds: +(parallelCopy.copyMs / 1000).toFixed(1), rowsPerSecond: rate(N, parallelCopy.copyMs) },
    ratioToParallelCopy: +(parallelCopy.copyMs / sink.totalMs).toFixed(2),
    rebuild: { seconds: +(rebuild.rebuildMs / 1000).toFixed(1), rowsPerSecond: rate(N, rebuild.rebuildMs) },
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  await cleanup(extra);
  await pool.end();
}
