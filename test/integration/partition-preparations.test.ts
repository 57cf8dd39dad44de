import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Consumer, Kafka, Producer, ProducerConfig } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import type { EnricherMetrics } from '../../src/enricher/enricher-metrics.js';
import { openHeadCache } from '../../src/enricher/head-cache.js';
import { encodeHead } from '../../src/enricher/head-store.js';
import { createPartitionOwner, WAITING_FOR_PREVIOUS } from '../../src/enricher/partition-owner.js';
import { createKafka } from '../../src/kafka/client.js';
import { allPartitions } from '../../src/kafka/hanging-transactions.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { enricherTopics, enricherTopicSpecs } from '../../src/wire/topics.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';

const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-partition-preparations', log: silentLogger });
const dir = mkdtempSync(join(tmpdir(), 'partition-preparations-'));
const closing: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A Kafka client whose first producer for `transactionalId` holds its first `transaction()` (the
 * fence) until `release()`: that preparation's fence of the partition then comes late, after a
 * later preparation, as when InitProducerId is retried for seconds after a broker restart.
 */
function gatingFence(real: Kafka, transactionalId: string) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  let gated = false;
  const wrapped = Object.create(real) as Kafka;
  wrapped.producer = (options?: ProducerConfig): Producer => {
    const producer = real.producer(options);
    if (options?.transactionalId !== transactionalId || gated) return producer;
    gated = true;
    const transaction = producer.transaction.bind(producer);
    producer.transaction = async () => {
      held = true;
      await gate;
      return transaction();
    };
    return producer;
  };
  return { kafka: wrapped, release, held: () => held };
}

/** A stand-in for the fetcher's consumer, on which the owner listens for group joins. */
function groupJoins() {
  let listener: ((event: { payload: { memberAssignment: Record<string, number[]> } }) => void) | undefined;
  const consumer = { events: { GROUP_JOIN: 'consumer.group_join' }, on: (_event: string, fn: typeof listener) => (listener = fn) } as unknown as Consumer;
  return { consumer, join: (assignment: Record<string, number[]>) => listener?.({ payload: { memberAssignment: assignment } }) };
}

/**
 * Two group joins in quick succession (a rejoin from inside kafkajs's fetch on stale metadata
 * right after a broker restart): the first join's preparation is overtaken while its fence of one
 * partition is still on its way. It used to go on fencing and catching up beside the second one:
 * its late fence fenced the second preparation's producer, and its catch-up moved the cache's mark
 * past the second one's barrier, after which a catch-up of that partition waited forever.
 */
describe('partition preparations', () => {
  it('run one at a time: an overtaken one fences nothing after the one that overtook it began', async () => {
    const internal = enricherTopics(config.topicPrefix);
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, enricherTopicSpecs(internal, 2));
    await admin.disconnect();
    const gated = gatingFence(kafka, `${internal.requests}.fetcher.1`);
    const cache = openHeadCache(join(dir, 'cache'), internal.heads);
    const metrics = { headsRestored: { inc: () => undefined } } as unknown as Pick<EnricherMetrics, 'headsRestored'>;
    const owner = createPartitionOwner({ kafka: gated.kafka, log: silentLogger, internal, cache, metrics, closing: () => allPartitions(kafka, [internal.requests, internal.heads, internal.delayed]) });
    closing.push(async () => cache.close(), () => owner.close());
    const joins = groupJoins();
    owner.onGroupJoin(joins.consumer);

    joins.join({ [internal.requests]: [0, 1] });
    await waitFor(gated.held, { what: 'the first preparation holds its fence of partition 1' });
    joins.join({ [internal.requests]: [0, 1] });
    // The second preparation either finished (it ran beside the first) or waits for the first.
    await waitFor(() => [WAITING_FOR_PREVIOUS, 'done'].includes(owner.preparationStage()), { what: 'the second preparation finished or queued' });
    gated.release();

    await owner.prepare(owner.generation());
    const owned = owner.partition(1, owner.generation());
    expect(owned).toBeDefined();
    // The partition's producer was not fenced by the overtaken preparation's late fence.
    const transaction = await owned!.producer.transaction();
    await transaction.send({ topic: internal.heads, messages: [{ key: 'Contract:a', value: encodeHead({ version: 1, contentHash: 'h1', deleted: false, fetchedAt: 1 }), partition: 1 }] });
    await transaction.commit();
    // And a preparation after it ends: no catch-up waits for a barrier behind the cache's mark.
    await owner.reset();
    await owner.prepare(owner.generation());
    expect(owner.partition(0, owner.generation())).toBeDefined();
  }, 120_000);
});
