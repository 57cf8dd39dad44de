import type { Admin, Consumer, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnricher } from '../../src/enricher/enricher.js';
import { enricherTopicSpecs, enricherTopics, type EnricherTopics } from '../../src/wire/topics.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import type { SnapshotRecord } from '../../src/wire/snapshot-record.js';
import { createHealth } from '../../src/health.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { topicNames } from '../../src/wire/topics.js';
import type { Config } from '../../src/config.js';
import type { Running } from '../../src/lifecycle.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createRegistry, type Registry } from '../../src/registry/registry.js';
import { runCli } from '../helpers/cli.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Growing the enricher's internal topics (docs/ARCHITECTURE.md, "Growing the partition count"),
 * step by step against the real broker, with the built CLI as an operator runs it. Requests carry
 * prefetched bodies, as the backfill writes them; a list page only versions a resource that has no
 * version yet, so later rounds are read from a stand-in API that answers the current round.
 */
interface Setup {
  config: Config;
  internal: EnricherTopics;
  kafka: Kafka;
  admin: Admin;
  registry: Registry;
  snapshots: SnapshotRecord[];
  collector: Consumer;
  env: Record<string, string>;
  /** The round the stand-in API answers. */
  round: number;
}

const RESOURCES = 40;
const ids = Array.from({ length: RESOURCES }, (_, i) => `grow-${i}`);

async function setUp(): Promise<Setup> {
  const config = testConfig();
  const log = createLogger(config.logLevel);
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'partition-growth-test', log });
  const admin = kafka.admin();
  await admin.connect();
  const registry = createRegistry(config.schemaRegistryUrl);
  const names = topicNames(config.topicPrefix);
  const internal = enricherTopics(config.topicPrefix);
  await ensureTopics(admin, [{ topic: names.snapshots, numPartitions: 6 }, ...enricherTopicSpecs(internal)]);
  const snapshots: SnapshotRecord[] = [];
  const collector = kafka.consumer({ groupId: `collector-${uniqueSuffix()}`, readUncommitted: false });
  await collector.connect();
  await collector.subscribe({ topic: names.snapshots, fromBeginning: true });
  await collector.run({ eachMessage: async ({ message }) => void snapshots.push((await registry.decode(message.value as Buffer)) as SnapshotRecord) });
  const env = { KAFKA_BROKERS: config.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: config.schemaRegistryUrl, TOPIC_PREFIX: config.topicPrefix, LOG_LEVEL: 'warn' };
  return { config, internal, kafka, admin, registry, snapshots, collector, env, round: 0 };
}

const enricher = (s: Setup): Promise<Running> =>
  startEnricher({ kafka: s.kafka, registry: s.registry, reader: { getResource: (_type, id) => Promise.resolve({ kind: 'found', body: JSON.stringify({ Id: id, round: s.round }) }) }, log: createLogger(s.config.logLevel), metrics: createMetrics(), health: createHealth() }, s.config);

/** One prefetched request per resource, as the backfill writes them. */
async function sendRound(s: Setup, round: number): Promise<void> {
  s.round = round;
  const producer = s.kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const now = Date.now();
  await producer.send({
    topic: s.internal.requests,
    acks: -1,
    messages: ids.map((id) => encodeFetchRequest({ type: 'Customer', id, eventId: null, event: null, receivedAt: now, source: null, prefetched: { body: JSON.stringify({ Id: id, round }), fetchedAt: now } })),
  });
  await producer.disconnect();
}

const versionsOf = (s: Setup, id: string) => s.snapshots.filter((r) => r.resource_id === id).map((r) => r.version).sort((a, b) => a - b);
const allAt = (s: Setup, version: number) => ids.every((id) => versionsOf(s, id).includes(version));
const partitionOf = (key: string, count: number) =>
  defaultPartitioner()({ topic: 't', partitionMetadata: Array.from({ length: count }, (_, p) => ({ partitionId: p, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] })), message: { key, value: null } });

async function tearDown(s: Setup | undefined): Promise<void> {
  await s?.collector.disconnect();
  await s?.admin.disconnect();
}

describe('growing the partition count of the enricher topics', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp();
  });
  afterAll(() => tearDown(s));

  it('refuses to start when requests and heads have different partition counts, naming both', async () => {
    const other = await setUp();
    try {
      await other.admin.createPartitions({ topicPartitions: [{ topic: other.internal.requests, count: 8 }] });
      const err = await enricher(other).then(
        (e) => e.stop().then(() => undefined),
        (e: unknown) => e as Error,
      );
      expect(err, 'the enricher started with mismatched topics').toBeInstanceOf(Error);
      const message = (err as Error).message;
      expect(message.split('\n')).toHaveLength(1);
      expect(message).toContain(`${other.internal.requests} has 8 partitions`);
      expect(message).toContain(`${other.internal.heads} has 6`);
      expect(message).toContain('billing-loader repartition');
    } finally {
      await tearDown(other);
    }
  });

  it('following the procedure, versions continue after the growth instead of restarting at 1', async () => {
    // Resources that change partition when 6 becomes 12: without moving their heads, these restart at 1.
    expect(ids.filter((id) => partitionOf(`Customer:${id}`, 6) !== partitionOf(`Customer:${id}`, 12)).length).toBeGreaterThan(5);
    let running = await enricher(s);
    await sendRound(s, 1);
    await waitFor(() => allAt(s, 1), { what: 'round 1 versioned', timeoutMs: 60_000 });
    await sendRound(s, 2);
    await waitFor(() => allAt(s, 2), { what: 'round 2 versioned', timeoutMs: 60_000 });

    // 1. Stop the enricher. Requests keep arriving meanwhile (the backfill, or requests written
    //    just before the stop): the procedure must carry them over too.
    await running.stop();
    await sendRound(s, 3);

    // 2. Grow both topics and move heads and pending requests to their new partitions.
    const help = await runCli(['repartition', '--help'], s.env);
    expect(help.code).toBe(0);
    const result = await runCli(['repartition', '--partitions', '12'], s.env);
    expect(result.code, result.stderr).toBe(0);
    for (const topic of [s.internal.requests, s.internal.heads]) expect((await s.admin.fetchTopicOffsets(topic)).length, topic).toBe(12);

    // 3. Start the enricher again.
    // Waiting for a count, not for version 3: a resource that restarted at 1 must fail the assertion below, not time out.
    running = await enricher(s);
    await waitFor(() => s.snapshots.length >= 3 * RESOURCES, { what: 'the pending round 3 versioned after the growth', timeoutMs: 60_000 });
    await sendRound(s, 4);
    await waitFor(() => s.snapshots.length >= 4 * RESOURCES, { what: 'round 4 versioned', timeoutMs: 60_000 });
    await running.stop();
    for (const id of ids) expect(versionsOf(s, id), id).toEqual([1, 2, 3, 4]);
  }, 240_000);

  it('refuses to start when both topics were grown by hand without moving the heads; repartition repairs it', async () => {
    const other = await setUp();
    try {
      let running = await enricher(other);
      await sendRound(other, 1);
      await waitFor(() => allAt(other, 1), { what: 'round 1 versioned', timeoutMs: 60_000 });
      await running.stop();
      await other.admin.createPartitions({ topicPartitions: [{ topic: other.internal.requests, count: 12 }, { topic: other.internal.heads, count: 12 }] });

      const err = await enricher(other).then(
        (e) => e.stop().then(() => undefined),
        (e: unknown) => e as Error,
      );
      expect(err, 'the enricher started with heads in partitions their resources left').toBeInstanceOf(Error);
      const message = (err as Error).message;
      expect(message.split('\n')).toHaveLength(1);
      expect(message).toContain(other.internal.heads);
      expect(message).toContain('billing-loader repartition');

      const result = await runCli(['repartition'], other.env);
      expect(result.code, result.stderr).toBe(0);
      running = await enricher(other);
      await sendRound(other, 2);
      await waitFor(() => other.snapshots.length >= 2 * RESOURCES, { what: 'round 2 versioned', timeoutMs: 60_000 });
      await running.stop();
      for (const id of ids) expect(versionsOf(other, id), id).toEqual([1, 2]);
    } finally {
      await tearDown(other);
    }
  }, 240_000);
});
