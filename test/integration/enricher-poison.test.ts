import { afterAll, beforeAll, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { topicNames } from '../../src/wire/topics.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness();
});
afterAll(async () => {
  await h?.stop();
});

it('a webhook record that cannot be decoded goes to the webhooks DLQ with its reason and coordinates, and processing goes on', async () => {
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'poison', log: silentLogger });
  const producer = kafka.producer();
  await producer.connect();
  const topic = topicNames(h.config.topicPrefix).webhooks;
  const [meta] = await producer.send({ topic, acks: -1, messages: [{ key: 'poison', value: Buffer.from('not avro at all') }] });
  await producer.disconnect();

  const s = h.sim.billing.signup();
  await waitFor(() => h.deadLetters.length === 1 && h.versionsOf('Contract', s.contractId).length === 1, { what: 'dead letter and later work' });
  // The DLQ record is the source record itself (key and value byte for byte), its context in headers.
  expect(h.deadLetters[0]).toMatchObject({
    format: 'headers',
    sourceTopic: topic,
    sourcePartition: meta?.partition,
    sourceOffset: meta?.baseOffset,
    stage: 'enricher',
    errorClass: 'decode',
    key: Buffer.from('poison'),
    value: Buffer.from('not avro at all'),
  });
  expect(h.deadLetters[0]?.errorMessage).not.toBe('');
});
