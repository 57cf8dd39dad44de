import { Writable } from 'node:stream';
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
 * A backlog of requests naming thousands of distinct resources in one partition, against an API
 * that answers one read at a time, slowly (10 ms each): some 25 s of reads in one batch, four
 * times the (short, 6 s) session timeout. The fetcher must drain it: each resource read about
 * once, the committed offset moving as it goes, and the member never thrown out of its group
 * (that re-reads the batch, forever, spending the API budget on nothing).
 */
const RESOURCES = 2000;
const SESSION_TIMEOUT_MS = 6000;

let h: EnricherHarness;
let server: RecordingServer | undefined;
let api: BillingApiClient | undefined;
let admin: Admin | undefined;
const logLines: string[] = [];
beforeAll(async () => {
  server = await startRecordingServer(
    tokenThen('tok', async (req, res) => {
      await sleep(10);
      json(res, 200, JSON.stringify({ Id: decodeURIComponent(req.url.split('/').pop() ?? ''), Name: 'backlog' }));
    }),
  );
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  h = await startEnricherHarness({
    log: createLogger('info', sink),
    fetcher: { sessionTimeoutMs: SESSION_TIMEOUT_MS },
    reader: () => (api = createBillingApiClient({ apiUrl: (server as RecordingServer).url, authUrl: (server as RecordingServer).url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' }, requestsPerSecond: 10_000, maxConcurrency: 1 })),
  });
});
afterAll(async () => {
  await admin?.disconnect();
  await h?.stop();
  await api?.close();
  await server?.close();
});

it('drains a backlog of thousands of distinct resources against a slow API, each read about once', { timeout: 180_000 }, async () => {
  const customers = idsOnPartition('Customer', `backlog-${uniqueSuffix()}`, RESOURCES, 0);
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'backlog-test', log: createLogger('error') });
  const requests = enricherTopics(h.config.topicPrefix).requests;
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const now = Date.now();
  await producer.send({ topic: requests, acks: -1, messages: customers.map((id) => encodeFetchRequest({ type: 'Customer', id, eventId: `e-${id}`, event: 'CustomerChanged', receivedAt: now, source: null })) });
  await producer.disconnect();

  admin = kafka.admin();
  await admin.connect();
  const committed = async () => {
    const [topic] = await (admin as Admin).fetchOffsets({ groupId: fetcherGroupId(h.config.topicPrefix), topics: [requests] });
    return Number(topic?.partitions.find((p) => p.partition === 0)?.offset ?? -1);
  };
  const steps = new Set<number>();
  const versioned = () => new Set(h.snapshots.map((s) => s.resource_id));
  await waitFor(
    async () => {
      steps.add(await committed());
      return customers.every((id) => versioned().has(id));
    },
    { timeoutMs: 120_000, intervalMs: 250, what: 'every resource of the backlog versioned' },
  );

  const reads = (server as RecordingServer).requests.filter((r) => r.url.startsWith('/api/')).length;
  expect(reads).toBeLessThanOrEqual(RESOURCES * 1.1);
  // The offset moved part by part, not once at the end of a batch of the whole backlog.
  expect(steps.size).toBeGreaterThan(5);
  // The member stayed in its group: assigned once (twice at most: its topics were created as
  // it joined), never again and again.
  expect(logLines.filter((l) => l.includes('"partitions assigned"')).length).toBeLessThanOrEqual(2);
  expect(logLines.filter((l) => l.includes('is not aware of this member'))).toEqual([]);
});

it('waits out a Retry-After longer than the session timeout without leaving the group', { timeout: 120_000 }, async () => {
  const from = logLines.length;
  const [id] = idsOnPartition('Customer', `wait-${uniqueSuffix()}`, 1, 1) as [string];
  let refused = 0;
  (server as RecordingServer).setHandler(
    tokenThen('tok', (req, res) => {
      // The client waits a Retry-After of up to a minute in-process: here 2 session timeouts.
      if (refused++ === 0) return json(res, 429, { Message: 'slow down' }, { 'Retry-After': String((2 * SESSION_TIMEOUT_MS) / 1000) });
      json(res, 200, JSON.stringify({ Id: decodeURIComponent(req.url.split('/').pop() ?? ''), Name: 'waited' }));
    }),
  );
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'retry-after-test', log: createLogger('error') });
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  await producer.send({ topic: enricherTopics(h.config.topicPrefix).requests, acks: -1, messages: [encodeFetchRequest({ type: 'Customer', id, eventId: `e-${id}`, event: 'CustomerChanged', receivedAt: Date.now(), source: null })] });
  await producer.disconnect();
  await waitFor(() => h.versionsOf('Customer', id).length > 0, { timeoutMs: 60_000, what: 'the version after the wait' });
  expect(refused).toBe(2);
  const since = logLines.slice(from);
  expect(since.filter((l) => l.includes('"partitions assigned"') || l.includes('is not aware of this member') || l.includes('rebalancing'))).toEqual([]);
});
