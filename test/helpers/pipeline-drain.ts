import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import type { Config } from '../../src/config.js';
import { quoteIdent } from '../../src/db/pool.js';
import { delayForwarderGroupId, enricherGroupId } from '../../src/enricher/enricher.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import { defaultPartitioner } from '../../src/kafka/client.js';
import { readToEnd } from '../../src/kafka/read-to-end.js';
import { PIPELINE_PARTITIONS, topicNames } from '../../src/wire/topics.js';
import type { Registry } from '../../src/registry/registry.js';
import { readDeadLetter, type StoredDeadLetter } from '../../src/wire/dead-letter.js';
import type { Simulator } from '../../src/simulator/simulator.js';
import type { ResourceType } from '../../src/billing-api/resource-types.js';
import { sinkGroupId } from '../../src/sink/sink.js';
import { uniqueSuffix } from './environment.js';
import { waitFor } from './wait-for.js';
import { SENTINEL_PREFIX } from './warehouse-truth.js';

/**
 * Committed records in a topic, read (0 for a topic that does not exist). Not the high minus the
 * low watermark: transaction markers take offsets too, and the fetcher commits one into every
 * partition it writes at each preparation (src/kafka/hanging-transactions.ts).
 */
export async function topicRecordCount(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) return 0;
  } finally {
    await admin.disconnect();
  }
  let records = 0;
  await readToEnd(kafka, topic, () => void records++);
  return records;
}

/** The end offsets of a topic, summed over partitions (0 for a topic that does not exist). */
async function topicEndOffsets(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) return 0;
    return (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

/** Per partition of a topic, in partition order: a group's committed offset ('-1' or undefined when none) and the end (the last stable offset). */
export async function groupPositions(kafka: Kafka, groupId: string, topic: string): Promise<{ partition: number; committed: string | undefined; end: string }[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const at = new Map((committed?.partitions ?? []).map((p) => [p.partition, p.offset]));
    return ends.sort((a, b) => a.partition - b.partition).map((e) => ({ partition: e.partition, committed: at.get(e.partition), end: e.high }));
  } finally {
    await admin.disconnect();
  }
}

/** How far a group's committed offsets are behind the end of a topic, summed over partitions (-1 offsets count as 0). */
export async function groupLag(kafka: Kafka, groupId: string, topic: string): Promise<number> {
  const positions = await groupPositions(kafka, groupId, topic);
  return positions.reduce((sum, p) => sum + Math.max(0, Number(p.end) - Math.max(0, Number(p.committed ?? 0))), 0);
}

/**
 * One sentinel fetch request per partition of the enricher's request topic (ids chosen with the
 * producer's own partitioner), carrying its body so that no API call is made. The fetcher
 * versions a sentinel only after every request ahead of it in its partition, and the sink
 * writes it only after every snapshot ahead of it (same key, same partition number): once all
 * sentinels are rows of `resource_versions`, everything requested before the call is in the
 * warehouse.
 */
export async function flushSnapshots(kafka: Kafka, config: Pick<Config, 'topicPrefix' | 'databaseSchema'>, pool: pg.Pool, timeoutMs = 90_000): Promise<void> {
  const topic = enricherTopics(config.topicPrefix).requests;
  const partitioner = defaultPartitioner();
  const partitionMetadata = Array.from({ length: PIPELINE_PARTITIONS }, (_, partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
  const run = uniqueSuffix();
  const sentinels = new Map<number, string>();
  for (let i = 0; sentinels.size < PIPELINE_PARTITIONS; i++) {
    const id = `${SENTINEL_PREFIX}${run}-${i}`;
    const partition = partitioner({ topic, partitionMetadata, message: { key: `Contract:${id}`, value: null } });
    if (!sentinels.has(partition)) sentinels.set(partition, id);
  }
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  try {
    const now = Date.now();
    await producer.send({
      topic,
      acks: -1,
      messages: [...sentinels.values()].map((id) => encodeFetchRequest({ type: 'Contract', id, eventId: null, event: null, receivedAt: now, source: null, prefetched: { body: JSON.stringify({ Id: id }), fetchedAt: now } })),
    });
  } finally {
    await producer.disconnect();
  }
  const ids = [...sentinels.values()];
  const table = `${quoteIdent(config.databaseSchema)}.resource_versions`;
  await waitFor(
    async () => {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE resource_type = 'Contract' AND resource_id = ANY($1)`, [ids]);
      return rows[0]?.n === ids.length;
    },
    { timeoutMs, intervalMs: 200, what: 'flush sentinels reached the warehouse' },
  );
}

/**
 * Waits, deterministically, until the pipeline has nothing left to do:
 * 1. the simulator has no delivery pending (each one delivered or dropped);
 * 2. the enricher's router has committed every webhook (its requests are written first);
 * 3. two rounds of flush sentinels reach the warehouse: the first proves every request was
 *    fetched and written, which also wrote every follow-up request (contract → customer) in the
 *    same transaction; the second proves those follow-ups were fetched and written too;
 * 4. until a round writes nothing new to the delay topic: every delayed reread was forwarded
 *    (the delay forwarder committed all of it, each once due), then two more rounds of sentinels;
 * 5. the sink has committed every webhook (after writing it to `webhook_events`, or to the DLQ).
 */
export async function drainPipeline(args: { kafka: Kafka; config: Config; pool: pg.Pool; sim: Simulator; timeoutMs?: number }): Promise<void> {
  const { kafka, config, pool, sim } = args;
  const timeoutMs = args.timeoutMs ?? 120_000;
  const names = topicNames(config.topicPrefix);
  await waitFor(() => sim.stats().webhooks.pending === 0, { timeoutMs, intervalMs: 100, what: 'simulator deliveries done' });
  await waitFor(async () => (await groupLag(kafka, enricherGroupId(config.topicPrefix), names.webhooks)) === 0, { timeoutMs, intervalMs: 200, what: 'enricher router committed every webhook' });
  const delayed = enricherTopics(config.topicPrefix).delayed;
  for (let written = -1; ; ) {
    await flushSnapshots(kafka, config, pool, timeoutMs);
    await flushSnapshots(kafka, config, pool, timeoutMs);
    const now = await topicEndOffsets(kafka, delayed);
    if (now === written) break;
    written = now;
    await waitFor(async () => (await groupLag(kafka, delayForwarderGroupId(config.topicPrefix), delayed)) === 0, { timeoutMs, intervalMs: 200, what: 'every delayed reread forwarded' });
  }
  await waitFor(async () => (await groupLag(kafka, sinkGroupId(config), names.webhooks)) === 0, { timeoutMs, intervalMs: 200, what: 'sink committed every webhook' });
}

/** The first `count` records of a DLQ topic, read in either format (src/wire/dead-letter.ts); waits for them. */
export async function readDeadLetters(kafka: Kafka, registry: Registry, topic: string, count: number): Promise<StoredDeadLetter[]> {
  const letters: StoredDeadLetter[] = [];
  const consumer = kafka.consumer({ groupId: `dlq-reader-${uniqueSuffix()}`, readUncommitted: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ partition, message }) => void letters.push(await readDeadLetter({ topic, partition, offset: message.offset }, message, (v) => registry.decode(v))) });
    await waitFor(() => letters.length >= count, { timeoutMs: 30_000, what: `${count} dead letters in ${topic}` });
  } finally {
    await consumer.disconnect();
  }
  return letters;
}

/**
 * Every record of a DLQ topic, read in either format, read-committed to its current end. For a DLQ the enricher
 * writes in transactions, whose commit markers make a record count from offsets too high.
 */
export async function readAllDeadLetters(kafka: Kafka, registry: Registry, topic: string): Promise<StoredDeadLetter[]> {
  const messages: { partition: number; message: import('kafkajs').KafkaMessage }[] = [];
  await readToEnd(kafka, topic, (partition, message) => void messages.push({ partition, message }));
  return Promise.all(messages.map(({ partition, message }) => readDeadLetter({ topic, partition, offset: message.offset }, message, (v) => registry.decode(v))));
}

/**
 * The DLQ records, less the enricher's expected give-ups: a `not-found` give-up of an object that
 * no reader could ever see (never created, or created and deleted before any read) and that has
 * no version. Everything else is a finding, one readable line each.
 */
export async function unexpectedDeadLetters(args: { kafka: Kafka; registry: Registry; config: Pick<Config, 'topicPrefix' | 'databaseSchema'>; pool: pg.Pool; sim: Simulator }): Promise<{ notFoundGiveUps: number; unexpected: string[] }> {
  const { kafka, registry, config, pool, sim } = args;
  const names = topicNames(config.topicPrefix);
  const unexpected: string[] = [];
  let notFoundGiveUps = 0;
  for (const letter of await readAllDeadLetters(kafka, registry, names.webhooksDlq)) {
    const what = `${letter.stage} ${letter.errorClass}: ${letter.errorMessage}`;
    if (letter.stage !== 'enricher' || letter.errorClass !== 'not-found') {
      unexpected.push(what);
      continue;
    }
    const request = JSON.parse((letter.value as Buffer).toString()) as { type: ResourceType; id: string };
    const history = sim.history(request.type, request.id);
    const { rows } = await pool.query(`SELECT 1 FROM ${quoteIdent(config.databaseSchema)}.resource_versions WHERE resource_type = $1 AND resource_id = $2`, [request.type, request.id]);
    if ((history === undefined || history.deleted) && rows.length === 0) notFoundGiveUps++;
    else unexpected.push(`${what} (${request.type} ${request.id} exists or has versions)`);
  }
  for (const letter of await readAllDeadLetters(kafka, registry, names.snapshotsDlq)) unexpected.push(`${letter.stage} ${letter.errorClass}: ${letter.errorMessage}`);
  return { notFoundGiveUps, unexpected };
}

/** Records in both DLQ topics. */
export async function deadLetterCount(kafka: Kafka, prefix: string): Promise<number> {
  const names = topicNames(prefix);
  return (await topicRecordCount(kafka, names.webhooksDlq)) + (await topicRecordCount(kafka, names.snapshotsDlq));
}
