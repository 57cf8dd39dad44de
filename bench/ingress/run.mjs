#!/usr/bin/env node
// Ingress benchmark (not a test): `npm run bench:ingress` (builds dist/ first; needs the local
// stack: `billing-loader stack up`). Plain ESM over the compiled dist/, because Node 20 cannot run
// TypeScript and the project carries no TypeScript runner.
//
// 1. The ingress runs as its own process (`billing-loader ingress`), as in production, and
//    autocannon drives POST /webhooks over loopback at concurrency 64 with realistic bodies.
// 2. In the same run, a bare kafkajs producer with the ingress's settings (idempotent, acks -1,
//    one request in flight, murmur2 partitioner) sends the same Avro records, built and encoded
//    the same way: the limit of this machine for this write path. Two shapes: batches of 64
//    back to back (what 64 concurrent callers can at best share), and 64 concurrent callers
//    sending one record each (kafkajs without any batching).
// 3. An offered load of 1,000 webhooks/s (open loop, see openLoop) for the p99 latency at a realistic rate.
// 4. For context, the HTTP floor: a bare node:http server (no Express, no Kafka) under the same load.
/* global fetch -- Node 20's built-in fetch */
// Environment: BENCH_SECONDS (default 20) per run; the usual KAFKA_BROKERS etc. (default: local stack).
import { spawn } from 'node:child_process';
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { createKafka, defaultPartitioner } = await dist('kafka/client.js');
const { ensureTopics } = await dist('kafka/topics.js');
const { topicNames, PIPELINE_PARTITIONS } = await dist('wire/topics.js');
const { createRegistry } = await dist('registry/registry.js');
const { silentLogger } = await dist('log.js');
const { parseWebhook } = await dist('ingress/parse-webhook.js');
const { recordKey } = await dist('ingress/record-key.js');
const { toWebhookRecord } = await dist('wire/webhook-record.js');
const { WEBHOOK_SCHEMA_FILE } = await dist('wire/schemas.js');

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CONCURRENCY = 64;
const OFFERED_RATE = 1000;

const prefix = `bench_${randomBytes(3).toString('hex')}`;
const config = configWithLocalStack({ ...process.env, TOPIC_PREFIX: prefix, LOG_LEVEL: 'warn' });
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'bench-ingress', log: silentLogger });
const registry = createRegistry(config.schemaRegistryUrl);

// Realistic bodies: the events of spec 6.2 in rough production proportions, 24-hex ids.
const id = () => randomBytes(12).toString('hex');
const iso = () => new Date(Date.now() + Math.floor(Math.random() * 30) * 86_400_000).toISOString();
const shapes = [
  () => ({ Event: 'ContractChanged', ContractId: id() }),
  () => ({ Event: 'ContractCreated', ContractId: id() }),
  () => ({ Event: 'OrderSucceeded', ContractId: id(), OrderId: id() }),
  () => ({ Event: 'CustomerChanged', CustomerId: id() }),
  () => ({ Event: 'InvoiceCreated', InvoiceId: id() }),
  () => ({ Event: 'PaymentSucceeded', PaymentTransactionId: id() }),
  () => ({ Event: 'RecurringBillingApproaching', ContractId: id() }),
  () => ({ Event: 'PaymentBearerExpiring', ContractId: id(), ExpiryDate: iso() }),
  () => ({ Event: 'PaymentEscalated', ContractId: id(), CustomerId: id(), YourCustomerId: `crm-${id().slice(0, 8)}`, TriggerDays: 5, DueDate: iso(), PaymentProvider: 'CreditCard', PaymentEscalationProcessId: id() }),
  () => ({ Event: 'InvoiceCorrected', OldInvoiceId: id(), NewInvoiceId: id(), OldInvoiceDraftId: id(), NewInvoiceDraftId: id() }),
];
const bodies = Array.from({ length: 5000 }, (_, i) => JSON.stringify(shapes[i % shapes.length]()));
let nextBody = 0;
const body = () => bodies[nextBody++ % bodies.length];

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const round = (n, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

async function freePort() {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startIngressProcess() {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'bin', 'billing-loader.js'), 'ingress'], {
    env: { ...process.env, TOPIC_PREFIX: prefix, INGRESS_PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ok) return { url, child };
    await sleep(200);
  }
  child.kill('SIGKILL');
  throw new Error('ingress did not become ready');
}

function cannon(url, options) {
  return autocannon({
    url: `${url}/webhooks`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: CONCURRENCY,
    duration: SECONDS,
    requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
    ...options,
  });
}

// Open-loop load at a fixed rate: request i is due at start + i/rate, whatever happened to the
// earlier ones, and its latency counts from that due time (no coordinated omission). Up to 64
// keep-alive connections; a request that finds them all busy waits, and that wait counts too.
// (autocannon's own corrected latencies at a fixed rate measure its timer jitter on a loaded
// 2-core machine: 180 ms p99 against a no-op server in a trial, so they are not used here.)
async function openLoop(url, rate, seconds) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const total = Math.round(rate * seconds);
  const latencies = [];
  const statuses = new Map();
  let errors = 0;
  const started = performance.now();
  const fire = (due) =>
    new Promise((resolve) => {
      const payload = body();
      const req = http.request(`${url}/webhooks`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - due);
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(payload);
    });
  const pending = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    // Late: latency counts from the due time. Early (a timer fires up to 1 ms ahead): from now.
    pending.push(fire(Math.min(due, performance.now())));
  }
  await Promise.all(pending);
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const ok = statuses.get(200) ?? 0;
  return { achievedPerSecond: round(ok / elapsed), p50ms: round(percentile(latencies, 50)), p99ms: round(percentile(latencies, 99)), non200: total - ok - errors, errors };
}

// The HTTP floor: a bare node:http server that reads the body and answers 200, no Kafka at all.
// What the ingress can at most reach on this machine with autocannon on the same cores.
async function startBareHttpProcess() {
  const port = await freePort();
  const code = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => { s.writeHead(200, { 'content-type': 'application/json' }); s.end('{}'); }); }).listen(${port}, '127.0.0.1')`;
  const child = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (await fetch(`${url}/webhooks`, { method: 'POST', body: '{}' }).then(() => true, () => false)) return { url, child };
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error('bare HTTP server did not start');
}

async function batchStats(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1] ?? NaN);
  return { meanBatch: value('billing_loader_ingress_produce_batch_size_sum') / value('billing_loader_ingress_produce_batch_size_count') };
}

async function bareProducer(schemaId, topic) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner, retry: { retries: Number.MAX_SAFE_INTEGER } });
  await producer.connect();
  const record = async () => {
    const text = body();
    const parsed = parseWebhook(text);
    const eventId = randomUUID();
    const value = await registry.encode(schemaId, toWebhookRecord(parsed.webhook, { eventId, receivedAtMs: Date.now(), body: text }));
    return { key: recordKey(parsed.webhook.fields, eventId), value };
  };
  const run = async (worker) => {
    const latencies = [];
    let records = 0;
    const end = performance.now() + SECONDS * 1000;
    const started = performance.now();
    await worker(end, (n, ms) => {
      records += n;
      for (let i = 0; i < n; i++) latencies.push(ms);
    });
    latencies.sort((a, b) => a - b);
    return { perSecond: records / ((performance.now() - started) / 1000), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  };
  // Batches of 64, back to back: records built and encoded per batch, as the ingress does per request.
  const batched = await run(async (end, done) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const messages = await Promise.all(Array.from({ length: CONCURRENCY }, record));
      await producer.send({ topic, acks: -1, timeout: 5000, messages });
      done(messages.length, performance.now() - t0);
    }
  });
  // 64 concurrent callers, one record per send: kafkajs's own behaviour without a batcher.
  const single = await run(async (end, done) => {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < end) {
          const t0 = performance.now();
          await producer.send({ topic, acks: -1, timeout: 5000, messages: [await record()] });
          done(1, performance.now() - t0);
        }
      }),
    );
  });
  await producer.disconnect();
  return { batched, single };
}

const loadAtStart = loadavg()[0] ?? NaN;
const admin = kafka.admin();
await admin.connect();
const names = topicNames(prefix);
const bareTopic = `${prefix}.bare-webhooks`;
let ingress;
try {
  await ensureTopics(admin, [{ topic: bareTopic, numPartitions: PIPELINE_PARTITIONS }]);
  const bareSchemaId = await registry.registerFile(`${bareTopic}-value`, WEBHOOK_SCHEMA_FILE);

  ingress = await startIngressProcess();
  console.error(`bench: warming up (5 s), then ${SECONDS} s per run at concurrency ${CONCURRENCY}`);
  await cannon(ingress.url, { duration: 5 });
  const saturated = await cannon(ingress.url, {});
  const saturatedBatch = await batchStats(ingress.url);
  const offered = await openLoop(ingress.url, OFFERED_RATE, SECONDS);

  ingress.child.kill('SIGTERM');
  await new Promise((resolve) => ingress.child.once('exit', resolve));
  ingress = undefined;

  const floor = await startBareHttpProcess();
  let httpFloor;
  let httpFloorOffered;
  try {
    httpFloor = await cannon(floor.url, {});
    httpFloorOffered = await openLoop(floor.url, OFFERED_RATE, SECONDS);
  } finally {
    floor.child.kill('SIGTERM');
  }

  const bare = await bareProducer(bareSchemaId, bareTopic);
  const ingressPerSecond = saturated.requests.total / saturated.duration;
  const result = {
    date: new Date().toISOString(),
    machine: `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), ${round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
    kafka: config.kafkaBrokers.join(','),
    // Other work on the machine (the broker, the registry, anything else) shares the same cores.
    loadAverage1m: { atStart: round(loadAtStart, 2), atEnd: round(loadavg()[0] ?? NaN, 2) },
    ingress: {
      concurrency: CONCURRENCY,
      perSecond: round(ingressPerSecond),
      p50ms: saturated.latency.p50,
      p99ms: saturated.latency.p99,
      non2xx: saturated.non2xx,
      errors: saturated.errors,
      meanRecordsPerProduceRequest: round(saturatedBatch.meanBatch),
    },
    ingressAtOfferedRate: { offeredPerSecond: OFFERED_RATE, ...offered },
    bareHttpNoKafka: { perSecond: round(httpFloor.requests.total / httpFloor.duration), p50ms: httpFloor.latency.p50, p99ms: httpFloor.latency.p99 },
    bareHttpNoKafkaAtOfferedRate: { offeredPerSecond: OFFERED_RATE, ...httpFloorOffered },
    bareBatched64: { perSecond: round(bare.batched.perSecond), p50ms: round(bare.batched.p50), p99ms: round(bare.batched.p99) },
    bareSingle64: { perSecond: round(bare.single.perSecond), p50ms: round(bare.single.p50), p99ms: round(bare.single.p99) },
    ratioIngressToBareBatched: round(ingressPerSecond / bare.batched.perSecond, 2),
    ratioIngressToBareSingle: round(ingressPerSecond / bare.single.perSecond, 2),
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(
    [
      '',
      `| run | throughput (/s) | p50 (ms) | p99 (ms) |`,
      `|---|---|---|---|`,
      `| ingress, concurrency ${CONCURRENCY} | ${result.ingress.perSecond} | ${result.ingress.p50ms} | ${result.ingress.p99ms} |`,
      `| ingress, ${OFFERED_RATE}/s offered | ${result.ingressAtOfferedRate.achievedPerSecond} | ${result.ingressAtOfferedRate.p50ms} | ${result.ingressAtOfferedRate.p99ms} |`,
      `| bare node:http, no Kafka, concurrency ${CONCURRENCY} | ${result.bareHttpNoKafka.perSecond} | ${result.bareHttpNoKafka.p50ms} | ${result.bareHttpNoKafka.p99ms} |`,
      `| bare node:http, no Kafka, ${OFFERED_RATE}/s offered | ${result.bareHttpNoKafkaAtOfferedRate.achievedPerSecond} | ${result.bareHttpNoKafkaAtOfferedRate.p50ms} | ${result.bareHttpNoKafkaAtOfferedRate.p99ms} |`,
      `| bare kafkajs, batches of ${CONCURRENCY} | ${result.bareBatched64.perSecond} | ${result.bareBatched64.p50ms} | ${result.bareBatched64.p99ms} |`,
      `| bare kafkajs, ${CONCURRENCY} callers x 1 record | ${result.bareSingle64.perSecond} | ${result.bareSingle64.p50ms} | ${result.bareSingle64.p99ms} |`,
      '',
      `ratio ingress / bare (batches of ${CONCURRENCY}): ${result.ratioIngressToBareBatched}; ingress / bare (1 record per send): ${result.ratioIngressToBareSingle}`,
    ].join('\n'),
  );
} finally {
  if (ingress) {
    ingress.child.kill('SIGTERM');
    await new Promise((resolve) => ingress.child.once('exit', resolve));
  }
  await admin.deleteTopics({ topics: [names.webhooks, bareTopic] }).catch(() => undefined);
  await admin.disconnect();
}
