import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { createRenewingProducer } from '../../src/kafka/renewing-producer.js';
import { silentLogger } from '../../src/log.js';
import { testConfig } from '../helpers/environment.js';
import { topicRecordCount } from '../helpers/pipeline-drain.js';

/** src/kafka/renewing-producer.ts against the real broker: a failed send costs the producer, not the next send. */
const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'renewing-producer-test', log: silentLogger });
const topic = `${config.topicPrefix}.renewing`;
beforeAll(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
});
const made: Producer[] = [];
const renewing = createRenewingProducer(() => {
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  made.push(p);
  return p;
});
afterAll(async () => {
  await renewing.disconnect();
});

describe('renewing producer', () => {
  it('keeps one producer while sends succeed, and replaces it after a failed send', async () => {
    await renewing.sendBatch({ topicMessages: [{ topic, messages: [{ value: 'a' }] }], acks: -1 });
    await renewing.sendBatch({ topicMessages: [{ topic, messages: [{ value: 'b' }] }], acks: -1 });
    expect(made).toHaveLength(1);
    // Larger than the broker's message.max.bytes (1 MiB): refused, not retriable.
    await expect(renewing.sendBatch({ topicMessages: [{ topic, messages: [{ value: Buffer.alloc(2 * 1024 * 1024) }] }], acks: -1 })).rejects.toThrow();
    await renewing.sendBatch({ topicMessages: [{ topic, messages: [{ value: 'c' }] }], acks: -1 });
    expect(made).toHaveLength(2);
    expect(await topicRecordCount(kafka, topic)).toBe(3);
  });
});
