import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnricherMetrics } from '../../src/enricher/enricher-metrics.js';
import { openHeadCache } from '../../src/enricher/head-cache.js';
import { createPartitionOwner } from '../../src/enricher/partition-owner.js';
import { watchHiddenCommits } from '../../src/enricher/hidden-commit-watch.js';
import { allPartitions } from '../../src/kafka/hanging-transactions.js';
import { enricherTopics, enricherTopicSpecs } from '../../src/wire/topics.js';
import { writeRestoreBarrier } from '../../src/enricher/head-store.js';
import { createKafka } from '../../src/kafka/client.js';
import { fencePreviousOwner } from '../../src/kafka/fence-previous-owner.js';
import { createTransactionalProducer } from '../../src/kafka/producers.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/wait-for.js';
import { connectRawBroker, type RawKafkaBroker } from '../helpers/raw-kafka-broker.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * A hanging transaction: records of a transactional producer id in a partition that no COMMIT or
 * ABORT marker ever closes. The partition's last stable offset stays below them for good, and a
 * read-committed consumer (every stage) sees nothing written after them. Kafka gets there when
 * a transaction's markers are lost (seen after a broker restart right after a commit was
 * acknowledged, in a request partition the fetcher wrote its follow-ups to). The partition
 * owner's preparation closes whatever its transactional id left open in every partition the
 * fetcher writes (docs/ARCHITECTURE.md, "Hanging transactions").
 *
 * The broker here takes a transactional produce the coordinator was never told of
 * (transaction.partition.verification.enable=false), which makes such records on demand.
 */
let kafka: PrivateService | undefined;
let raw: RawKafkaBroker | undefined;
beforeAll(async () => {
  if (!nativeKafka) return;
  kafka = await startPrivateKafka({ brokerSettings: ['transaction.partition.verification.enable=false'] });
  raw = await connectRawBroker(kafka.address);
});
afterAll(async () => {
  try {
    await raw?.disconnect();
  } finally {
    await kafka?.dispose();
  }
});

/** Partitions 0-2 of `topic` once none holds an open transaction (last stable offset = high watermark), with their end offsets. */
function closedPartitions(b: RawKafkaBroker, topic: string) {
  return waitFor(
    async () => {
      const e = await b.endOffsets(topic, [0, 1, 2]);
      return [...e.values()].every((o) => o.lastStable === o.high) ? e : undefined;
    },
    { timeoutMs: 30_000, what: `no transaction left open in ${topic}` },
  );
}

describe.skipIf(!nativeKafka)('a transaction left open in a partition without markers', () => {
  it('is closed by the next restore barrier of the same transactional id, committing what it wrote', async () => {
    const client = createKafka({ brokers: [(kafka as PrivateService).address], clientId: 'test-hanging-transaction', log: silentLogger });
    const requests = 'hang.enricher.requests';
    const heads = 'hang.enricher.heads';
    const admin = client.admin();
    await admin.connect();
    await ensureTopics(admin, [
      { topic: requests, numPartitions: 3 },
      { topic: heads, numPartitions: 3, configEntries: { 'cleanup.policy': 'compact' } },
    ]);
    await admin.disconnect();
    const transactionalId = `${requests}.fetcher.0`;
    const b = raw as RawKafkaBroker;

    // The orphan: a follow-up request the fetcher of partition 0 wrote into request partition 2.
    await b.writeOrphanedTransaction(transactionalId, requests, 2, ['orphaned follow-up']);
    expect((await b.endOffsets(requests, [2])).get(2)).toEqual({ lastStable: 0n, high: 1n });

    // What the next owner of request partition 0 does: fence, then commit a restore barrier.
    const producer = createTransactionalProducer(client, transactionalId);
    await producer.connect();
    try {
      await fencePreviousOwner(producer);
      await writeRestoreBarrier(producer, heads, 0, [{ topic: requests, partitions: [0, 1, 2].map((partition) => ({ partition })) }]);
    } finally {
      await producer.disconnect();
    }

    // The orphan (offset 0) is now followed by a COMMIT marker of its producer id (offset 1). The
    // coordinator writes markers after it answers the commit, and a partition's last stable
    // offset moves once its high watermark has passed the marker: wait until every partition is
    // stable (as an open transaction never is), then look at the offsets.
    const ends = await closedPartitions(b, requests);
    expect(ends.get(2)).toEqual({ lastStable: 2n, high: 2n });
    // The other partitions got a marker and nothing else; none is left open.
    for (const p of [0, 1]) expect(ends.get(p)).toEqual({ lastStable: 1n, high: 1n });

    // And a read-committed consumer sees the orphan's record: committed, as acknowledged.
    const consumer = client.consumer({ groupId: 'hang-reader', readUncommitted: false });
    const seen: string[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: requests, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        setTimeout(() => reject(new Error(`no committed record in ${requests} within 30 s`)), 30_000).unref();
        consumer
          .run({
            eachMessage: async ({ message }) => {
              seen.push(message.value?.toString() ?? '');
              resolve();
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
    expect(seen).toEqual(['orphaned follow-up']);
  });

  it("is closed when the fetcher's partition owner prepares its partitions, in every topic the fetcher writes", async () => {
    const client = createKafka({ brokers: [(kafka as PrivateService).address], clientId: 'test-hanging-owner', log: silentLogger });
    const internal = enricherTopics('owner');
    const admin = client.admin();
    await admin.connect();
    await ensureTopics(admin, enricherTopicSpecs(internal, 3));
    await admin.disconnect();
    const b = raw as RawKafkaBroker;
    // Request partition 1's fetcher left a follow-up in request partition 2 and a delayed request
    // in delayed partition 0, both without markers.
    await b.writeOrphanedTransaction(`${internal.requests}.fetcher.1`, internal.requests, 2, ['follow-up']);
    await b.writeOrphanedTransaction(`${internal.requests}.fetcher.1`, internal.delayed, 0, ['delayed']);
    expect((await b.endOffsets(internal.requests, [2])).get(2)).toEqual({ lastStable: 0n, high: 1n });

    const dir = mkdtempSync(join(tmpdir(), 'hanging-owner-'));
    const cache = openHeadCache(join(dir, 'cache'), internal.heads);
    const metrics = { headsRestored: { inc: () => undefined } } as unknown as Pick<EnricherMetrics, 'headsRestored'>;
    const owner = createPartitionOwner({ kafka: client, log: silentLogger, internal, cache, metrics, closing: () => allPartitions(client, [internal.requests, internal.heads, internal.delayed]) });
    let listener: ((event: { payload: { memberAssignment: Record<string, number[]> } }) => void) | undefined;
    const consumer = { events: { GROUP_JOIN: 'consumer.group_join' }, on: (_event: string, fn: typeof listener) => (listener = fn) } as unknown as Consumer;
    owner.onGroupJoin(consumer);
    try {
      listener?.({ payload: { memberAssignment: { [internal.requests]: [0, 1, 2] } } });
      await owner.prepare(owner.generation());
      for (const topic of [internal.requests, internal.delayed]) await closedPartitions(b, topic);
    } finally {
      await owner.close();
      await cache.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('hides the records committed after it, which the fetcher notices and closes its transactions again', async () => {
    const client = createKafka({ brokers: [(kafka as PrivateService).address], clientId: 'test-hidden-commits', log: silentLogger });
    const topic = 'watch.enricher.requests';
    const admin = client.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    const b = raw as RawKafkaBroker;
    await b.writeOrphanedTransaction('another-writer', topic, 0, ['orphan']);

    const calls: { topic: string }[] = [];
    let closed!: () => void;
    const closing = new Promise<void>((resolve) => (closed = resolve));
    const watch = watchHiddenCommits({
      kafka: client,
      log: silentLogger,
      metrics: { hiddenCommits: { inc: (labels: { topic: string }) => void calls.push(labels) } } as unknown as Pick<EnricherMetrics, 'hiddenCommits'>,
      hiddenAfterMs: 2000,
      closeTransactions: async () => closed(),
    });
    const producer = createTransactionalProducer(client, 'watch-writer');
    await producer.connect();
    try {
      const transaction = await producer.transaction();
      const sent = await transaction.send({ topic, acks: -1, messages: [{ value: 'committed', partition: 0 }] });
      await transaction.commit();
      expect(sent[0]?.baseOffset).toBe('1');
      watch.committed([{ topic, partition: 0, end: '2' }]);
      // Committed, yet behind the orphan's records: the last stable offset stays at 0.
      await closing;
      expect(calls).toEqual([{ topic }]);
      expect((await b.endOffsets(topic, [0])).get(0)?.lastStable).toBe(0n);
    } finally {
      await watch.stop();
      await producer.disconnect();
    }
  });
});
