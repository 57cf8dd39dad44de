import { afterAll, beforeAll, expect, it } from 'vitest';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * A rolling upgrade runs old and new enrichers side by side, and a rollback runs the old one over
 * what the new one wrote: a fetch request of a later format that declares this one's readers
 * enough (src/wire/record-format.ts) is acted on like one of its own, not dead-lettered; one that
 * needs a later reader is dead-lettered with the reason, and the work behind it goes on.
 */
let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness();
});
afterAll(async () => {
  await h?.stop();
});

it('a request written in a later, compatible format is versioned; one that needs a later reader is dead-lettered with why', async () => {
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'mixed-formats', log: silentLogger });
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const now = Date.now();
  const readable = `later-${uniqueSuffix()}`;
  const unreadable = `later-${uniqueSuffix()}`;
  const laterRequest = (id: string, readableFrom: number) => ({
    key: `Contract:${id}`,
    value: Buffer.from(JSON.stringify({ v: 2, readableFrom, type: 'Contract', id, eventId: null, event: null, receivedAt: now, source: null, prefetched: { body: JSON.stringify({ Id: id }), fetchedAt: now }, priority: 'high' })),
  });
  const topic = enricherTopics(h.config.topicPrefix).requests;
  await producer.send({ topic, acks: -1, messages: [laterRequest(readable, 1), laterRequest(unreadable, 2)] });
  await producer.disconnect();

  await h.flushEnricher();
  expect(h.versionsOf('Contract', readable).map((s) => s.version)).toEqual([1]);
  expect(h.versionsOf('Contract', unreadable)).toEqual([]);
  expect(h.deadLetters).toHaveLength(1);
  expect(h.deadLetters[0]).toMatchObject({ sourceTopic: topic, errorClass: 'invalid-request', key: Buffer.from(`Contract:${unreadable}`) });
  expect(h.deadLetters[0]?.errorMessage).toBe('fetch request format 2 needs a reader of format 2 or later; this one reads up to 1');
});
