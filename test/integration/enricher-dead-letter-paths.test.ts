import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBillingApiClient, type BillingApiClient } from '../../src/billing-api/client.js';
import { redrive } from '../../src/dlq/redrive.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/registry/registry.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import { enricherTopics, topicNames } from '../../src/wire/topics.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { json, startRecordingServer, tokenThen, type RecordingServer } from './billing-api-recording-server.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * The fetcher's dead-letter paths not covered elsewhere: a request this enricher cannot read
 * (`invalid-request`) and an identifier the API refuses with 400 (`rejected-by-api`). Each letter
 * is the request record byte for byte; once the API accepts the identifier, redriving the letter
 * makes the enricher read it and publish its version.
 */
let h: EnricherHarness;
let server: RecordingServer;
let api: BillingApiClient | undefined;
let refusing = true;
beforeAll(async () => {
  server = await startRecordingServer(
    tokenThen('tok', (req, res) => {
      const id = decodeURIComponent(req.url.split('/').pop() ?? '');
      if (refusing && id.startsWith('refused')) return json(res, 400, JSON.stringify({ Message: 'invalid id' }));
      json(res, 200, JSON.stringify({ Id: id }));
    }),
  );
  h = await startEnricherHarness({
    reader: () => (api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' }, requestsPerSecond: 10_000, maxConcurrency: 16 })),
  });
});
afterAll(async () => {
  await h?.stop();
  await api?.close();
  await server?.close();
});

it('dead-letters an unreadable request and a refused identifier as the records read, and a redrive of the refused one versions it', { timeout: 120_000 }, async () => {
  const requests = enricherTopics(h.config.topicPrefix).requests;
  const run = uniqueSuffix();
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'dlq-paths-test', log: createLogger('error') });
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const refused = encodeFetchRequest({ type: 'Customer', id: `refused-${run}`, eventId: null, event: null, receivedAt: Date.now(), source: null });
  const garbage = { key: `Customer:garbage-${run}`, value: Buffer.from('{"not":"a fetch request"}') };
  await producer.send({ topic: requests, acks: -1, messages: [refused, garbage] });
  await producer.disconnect();

  await waitFor(() => h.deadLetters.length === 2, { what: 'two dead letters' });
  const byClass = new Map(h.deadLetters.map((l) => [l.errorClass, l]));
  expect(byClass.get('invalid-request')).toMatchObject({ format: 'headers', stage: 'enricher', sourceTopic: requests, key: Buffer.from(garbage.key), value: garbage.value });
  expect(byClass.get('rejected-by-api')).toMatchObject({ format: 'headers', stage: 'enricher', sourceTopic: requests, key: Buffer.from(refused.key), value: refused.value });
  expect(byClass.get('rejected-by-api')?.errorMessage).toMatch(/400/);
  expect(h.versionsOf('Customer', `refused-${run}`)).toEqual([]);

  // The API accepts the identifier now: the letter goes back to the requests topic and is read again.
  refusing = false;
  const outcome = await redrive({ kafka, registry: createRegistry(h.config.schemaRegistryUrl), prefix: h.config.topicPrefix, dlqTopics: [topicNames(h.config.topicPrefix).webhooksDlq] }, { errorClasses: ['rejected-by-api'] });
  expect(outcome.redriven.map((l) => l.errorClass)).toEqual(['rejected-by-api']);
  await waitFor(() => h.versionsOf('Customer', `refused-${run}`).length === 1, { what: 'the redriven request versioned' });
  expect(h.deadLetters).toHaveLength(2);
});
