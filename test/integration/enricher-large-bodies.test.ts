import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBillingApiClient, type BillingApiClient } from '../../src/billing-api/client.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { idsOnPartition, startEnricherHarness, type EnricherHarness } from './enricher-harness.js';
import { json, startRecordingServer, tokenThen, type RecordingServer } from './billing-api-recording-server.js';

/**
 * New resources with 4 KB bodies, a thousand of them in one request partition: their snapshots
 * together are several times the broker's largest record batch (1 MiB by default), so one send
 * per part would fail with MESSAGE_TOO_LARGE, which is not retriable. And one body of 2 MiB,
 * which fits no send at all: it goes to the DLQ, and the partition moves on.
 */
const RESOURCES = 1000;
const HUGE = 2 * 1024 * 1024;

let h: EnricherHarness;
let server: RecordingServer;
let api: BillingApiClient | undefined;
beforeAll(async () => {
  server = await startRecordingServer(
    tokenThen('tok', (req, res) => {
      const id = decodeURIComponent(req.url.split('/').pop() ?? '');
      json(res, 200, JSON.stringify({ Id: id, Pad: 'x'.repeat(id.startsWith('huge') ? HUGE : 4096) }));
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

it('splits big outputs into sends that fit, and dead-letters a body that never fits', { timeout: 180_000 }, async () => {
  const requests = enricherTopics(h.config.topicPrefix).requests;
  const run = uniqueSuffix();
  const customers = idsOnPartition('Customer', `big-${run}`, RESOURCES, 0);
  const [huge] = idsOnPartition('Customer', `huge-${run}`, 1, 0) as [string];
  const ids = [...customers.slice(0, RESOURCES / 2), huge, ...customers.slice(RESOURCES / 2)];

  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'large-bodies-test', log: createLogger('error') });
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const now = Date.now();
  await producer.send({ topic: requests, acks: -1, messages: ids.map((id) => encodeFetchRequest({ type: 'Customer', id, eventId: `e-${id}`, event: 'CustomerChanged', receivedAt: now, source: null })) });
  await producer.disconnect();

  await waitFor(() => h.deadLetters.some((d) => String(d.key) === `Customer:${huge}`), { timeoutMs: 90_000, what: 'the 2 MiB body dead-lettered' });
  const versioned = () => new Set(h.snapshots.map((s) => s.resource_id));
  await waitFor(() => customers.every((id) => versioned().has(id)), { timeoutMs: 90_000, what: 'every 4 KB resource versioned' });
  await h.flushEnricher(); // the partition is not stuck behind either
  expect(h.versionsOf('Customer', huge)).toEqual([]);
  const letter = h.deadLetters.find((d) => String(d.key) === `Customer:${huge}`);
  expect(letter).toMatchObject({ errorClass: 'snapshot-too-large', stage: 'enricher', format: 'headers' });
  expect(h.deadLetters).toHaveLength(1);
});
