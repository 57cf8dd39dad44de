import { describe, expect, it } from 'vitest';
import { createKafka, EOS_RETRY } from '../../src/kafka/client.js';
import { readToEnd } from '../../src/kafka/read-to-end.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-read-to-end', log: silentLogger });

/**
 * A fenced writer's aborted transaction at the end of a partition (what a kill -9 of a
 * transactional stage leaves behind) is filtered out by a read-committed consumer: kafkajs then
 * never calls eachBatch for it. Reading "to the end" must still finish.
 */
describe('readToEnd', () => {
  it('finishes on partitions whose tail, or whole content, is an aborted transaction', async () => {
    const topic = `${config.topicPrefix}.read-to-end`;
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic, numPartitions: 2 }]);
    await admin.disconnect();

    const producer = kafka.producer({ transactionalId: `${topic}.writer`, idempotent: true, maxInFlightRequests: 1, retry: EOS_RETRY });
    await producer.connect();
    try {
      const committed = await producer.transaction();
      await committed.send({ topic, messages: [{ key: 'a', value: 'kept', partition: 0 }] });
      await committed.commit();
      const aborted = await producer.transaction();
      await aborted.send({
        topic,
        messages: [
          { key: 'b', value: 'dropped', partition: 0 },
          { key: 'c', value: 'dropped', partition: 1 },
        ],
      });
      await aborted.abort();
    } finally {
      await producer.disconnect();
    }

    const seen: string[] = [];
    await readToEnd(kafka, topic, (partition, m) => seen.push(`${partition}:${m.value?.toString() ?? ''}`));
    expect(seen).toEqual(['0:kept']);
  }, 60_000);

  // A barrier that never comes (one the read had started past) held a preparation forever.
  it('fails a read to a barrier that makes no progress, instead of waiting for it forever', async () => {
    const topic = `${config.topicPrefix}.read-to-barrier`;
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: 'a', value: 'kept', partition: 0 }] });
    await producer.disconnect();

    const reading = readToEnd(kafka, topic, () => undefined, [0], { barriers: new Map([[0, 'a barrier never written']]), idleTimeoutMs: 3000 });
    await expect(reading).rejects.toMatchObject({ name: 'LoaderError', retriable: true });
  }, 60_000);

  it('ends when its signal is aborted, with the signal\'s reason', async () => {
    const topic = `${config.topicPrefix}.read-aborted`;
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    const cancel = new AbortController();
    const reason = new Error('overtaken');
    const reading = readToEnd(kafka, topic, () => undefined, [0], { barriers: new Map([[0, 'a barrier never written']]), signal: cancel.signal });
    cancel.abort(reason);
    await expect(reading).rejects.toBe(reason);
  }, 60_000);
});
