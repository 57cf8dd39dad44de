import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from 'kafkajs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBillingApiClient, type BillingApiClient } from '../../src/billing-api/client.js';
import { fetcherGroupId } from '../../src/enricher/enricher.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { json, startRecordingServer, tokenThen, type RecordingServer } from './billing-api-recording-server.js';
import { idsOnPartition, startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * Stopping (SIGTERM) while a backlog drains: the fetcher finishes the part in hand and stops,
 * instead of reading the whole batch first (1,500 resources at 10 ms a read, one at a time:
 * some 20 s, within the default session timeout, so a fetcher taking batches whole finishes and
 * commits all of it before its stop returns).
 */
const RESOURCES = 1500;

let h: EnricherHarness;
let server: RecordingServer | undefined;
let api: BillingApiClient | undefined;
let admin: Admin | undefined;
beforeAll(async () => {
  const s = await startRecordingServer(
    tokenThen('tok', async (req, res) => {
      await sleep(10);
      json(res, 200, JSON.stringify({ Id: decodeURIComponent(req.url.split('/').pop() ?? ''), Name: 'backlog' }));
    }),
  );
  server = s;
  h = await startEnricherHarness({
    reader: () => (api = createBillingApiClient({ apiUrl: s.url, authUrl: s.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' }, requestsPerSecond: 10_000, maxConcurrency: 1 })),
  });
});
afterAll(async () => {
  await admin?.disconnect();
  await h?.stop();
  await api?.close();
  await server?.close();
});

it('a stop during a backlog waits for the part in hand, not for the whole batch', { timeout: 120_000 }, async () => {
  const ids = idsOnPartition('Customer', `stop-${uniqueSuffix()}`, RESOURCES, 0);
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'backlog-stop-test', log: createLogger('error') });
  const requests = enricherTopics(h.config.topicPrefix).requests;
  admin = kafka.admin();
  await admin.connect();
  const start = Number((await admin.fetchTopicOffsets(requests)).find((o) => o.partition === 0)?.high);
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const now = Date.now();
  await producer.send({ topic: requests, acks: -1, messages: ids.map((id) => encodeFetchRequest({ type: 'Customer', id, eventId: `e-${id}`, event: 'CustomerChanged', receivedAt: now, source: null })) });
  await producer.disconnect();

  await waitFor(() => (server as RecordingServer).requests.filter((r) => r.url.startsWith('/api/')).length > 50, { timeoutMs: 30_000, what: 'the drain under way' });
  await h.stopEnrichers();
  const [topic] = await admin.fetchOffsets({ groupId: fetcherGroupId(h.config.topicPrefix), topics: [requests] });
  const committed = Number(topic?.partitions.find((p) => p.partition === 0)?.offset);
  // The part in hand was finished and committed; the rest of the batch was left for later.
  expect(committed).toBeGreaterThan(start);
  expect(committed).toBeLessThan(start + RESOURCES);
  const published = () => new Set(h.snapshots.map((s) => s.resource_id));
  await waitFor(() => ids.slice(0, committed - start).every((id) => published().has(id)), { what: 'the committed parts published' });
});
