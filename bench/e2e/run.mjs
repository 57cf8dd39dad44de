#!/usr/bin/env node
// End-to-end benchmark (not a test): `npm run bench:e2e` (builds dist/ first; needs the local
// stack: `billing-loader stack up`). Plain ESM over the compiled dist/.
//
// The three components run as separate processes (`billing-loader ingress|enricher|sink`), as in
// production, so CPU and RSS are per component (sampled from /proc every second). The sandbox
// billing service runs here, answering with 20 ms latency; it sends webhooks to the ingress.
// First a warm-up of BENCH_WARMUP_SECONDS (default 30) at the steady load, reported but kept
// apart: the components' JIT and the broker's JVM are cold (the first 30 s of a cold steady phase
// ran at a median freshness 2-5x that of the rest). Then two phases of BENCH_SECONDS each
// (default 120), both at BENCH_RATE webhooks/s (default 500):
//   steady: distinct events (changes to existing contracts and customers), each delivered once;
//   storm:  BENCH_RATE/5 distinct events/s, each delivered 5 times.
// Reported per phase: webhooks delivered, fetches per webhook, freshness from the webhook's
// receipt (webhook_events.received_at) to its version landing in PostgreSQL
// (resource_versions.loaded_at), p50/p99, and per component CPU (% of one core) and peak RSS.
/* global fetch -- Node 20's built-in fetch */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { createPool, quoteIdent } = await dist('db/pool.js');
const { migrate } = await dist('db/migrate.js');
const { silentLogger } = await dist('log.js');
const { startSimulator } = await dist('simulator/simulator.js');

const SECONDS = Number(process.env.BENCH_SECONDS ?? 120);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 30);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const suffix = randomBytes(3).toString('hex');
const env = { ...process.env, TOPIC_PREFIX: `bench_${suffix}`, DATABASE_SCHEMA: `bench_${suffix}`, LOG_LEVEL: 'warn' };
const config = configWithLocalStack(env);
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'bench-e2e', log: silentLogger, max: 2 });
await migrate(pool, { schema: config.databaseSchema, log: silentLogger });

const sim = await startSimulator({ seed: 9, faults: { latencyMs: 20 }, rateLimit: { requestsPerSecond: 3000, burst: 3000 }, delivery: { retryBaseDelayMs: 200 } });
const ports = { ingress: 18480 + Math.floor(Math.random() * 100), enricher: 18680 + Math.floor(Math.random() * 100), sink: 18880 + Math.floor(Math.random() * 100) };
const componentEnv = {
  ...env,
  BILLING_API_URL: sim.baseUrl,
  BILLING_AUTH_URL: sim.authUrl,
  BILLING_CLIENT_ID: sim.clientId,
  BILLING_CLIENT_SECRET: sim.clientSecret,
  BILLING_API_REQUESTS_PER_SECOND: '2500',
  BILLING_API_MAX_CONCURRENCY: '48',
  INGRESS_PORT: String(ports.ingress),
  ENRICHER_PORT: String(ports.enricher),
  SINK_PORT: String(ports.sink),
};
// Node/V8 flags of the three components, e.g. BENCH_NODE_ARGS='--max-semi-space-size=8' or '--cpu-prof'.
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const components = Object.fromEntries(
  ['sink', 'enricher', 'ingress'].map((name) => {
    const child = spawn(process.execPath, [...nodeArgs, join(root, 'bin', 'billing-loader.js'), name], { env: componentEnv, stdio: ['ignore', 'ignore', 'inherit'] });
    return [name, { child, rssPeakMb: 0 }];
  }),
);
const ready = async (port) => {
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
};
await Promise.all([ready(ports.ingress), ready(ports.enricher), ready(ports.sink)]);
sim.setWebhookUrl(`http://127.0.0.1:${ports.ingress}/webhooks`);

const ticks = () => {
  const out = {};
  for (const [name, c] of Object.entries(components)) {
    const stat = readFileSync(`/proc/${c.child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out[name] = Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100/s)
  }
  return out;
};
const sampleRss = () => {
  for (const c of Object.values(components)) {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${c.child.pid}/status`, 'utf8'))?.[1] ?? 0);
    c.rssPeakMb = Math.max(c.rssPeakMb, Math.round(kb / 1024));
  }
};

// The population the load changes; created before measuring.
const signups = Array.from({ length: 400 }, () => sim.billing.signup({ trial: false }));
await drain();

function fetchCount() {
  return Object.entries(sim.stats().requests.byRoute)
    .filter(([route]) => /^GET \/api\/v1\/\w+\/:id$/.test(route))
    .reduce((n, [, outcomes]) => n + Object.values(outcomes).reduce((a, b) => a + b, 0), 0);
}
async function versionCount() {
  return Number((await pool.query(`SELECT count(*) n FROM ${quoteIdent(config.databaseSchema)}.resource_versions`)).rows[0].n);
}
async function drain() {
  let last = -1;
  for (;;) {
    await sleep(1000);
    const n = (await versionCount()) + fetchCount();
    if (n === last && sim.stats().webhooks.pending === 0) return;
    last = n;
  }
}

/** A component's /metrics, as a lookup of one sample by metric name (labels ignored). */
async function scrape(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return (name) => Number(new RegExp(`^billing_loader_${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

// Produce requests of the ingress so far, and the records they carried (its batching at this load).
async function ingressProduces() {
  const value = await scrape(ports.ingress);
  return { requests: value('ingress_produce_batch_size_count'), records: value('ingress_produce_batch_size_sum') };
}

// What the RSS is made of at the end of a phase, from the component's own /metrics (MB).
async function memoryBreakdown(port) {
  const value = await scrape(port);
  const mb = (name) => Math.round(value(name) / 2 ** 20);
  return { rss: mb('process_resident_memory_bytes'), heapTotal: mb('nodejs_heap_size_total_bytes'), heapUsed: mb('nodejs_heap_size_used_bytes'), external: mb('nodejs_external_memory_bytes') };
}

async function phase(name, copies, seconds = SECONDS) {
  for (const c of Object.values(components)) c.rssPeakMb = 0;
  const before = { delivered: sim.stats().webhooks.delivered, fetches: fetchCount(), ticks: ticks(), produces: await ingressProduces() };
  const startedAt = new Date();
  const started = Date.now();
  let webhooks = 0;
  let op = 0;
  let seq = sim.stats().events;
  const rssTimer = setInterval(sampleRss, 1000);
  while (Date.now() - started < seconds * 1000) {
    const due = ((Date.now() - started) / 1000) * RATE;
    while (webhooks < due) {
      const s = signups[op % signups.length];
      if (op % 2 === 0) sim.billing.changePlan(s.contractId, op % 3);
      else sim.billing.changeCustomer(s.customerId);
      op++;
      // sim.stats() and sim.events() copy everything: track the event sequence here instead.
      const fresh = sim.eventsSince(seq);
      for (const e of fresh) for (let c = 1; c < copies; c++) sim.emit(e.payload);
      seq += fresh.length * copies;
      webhooks += fresh.length * copies;
    }
    await sleep(10);
  }
  const wall = (Date.now() - started) / 1000;
  const after = ticks();
  const produces = await ingressProduces();
  const memory = Object.fromEntries(await Promise.all(Object.keys(components).map(async (n) => [n, await memoryBreakdown(ports[n])])));
  clearInterval(rssTimer);
  await drain();
  const schema = quoteIdent(config.databaseSchema);
  const { rows } = await pool.query(
    // Where the time goes: receipt → the API's answer (router, request topic, fetcher queue and
    // read), then answer → row (the snapshot transaction, the snapshot topic, the sink).
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d) * 1000 AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY d) * 1000 AS p99, count(*) AS n,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY f) * 1000 AS fetch_p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY f) * 1000 AS fetch_p99,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY l) * 1000 AS load_p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY l) * 1000 AS load_p99
       FROM (SELECT extract(epoch FROM v.loaded_at - w.received_at) AS d, extract(epoch FROM v.fetched_at - w.received_at) AS f, extract(epoch FROM v.loaded_at - v.fetched_at) AS l
               FROM ${schema}.resource_versions v JOIN ${schema}.webhook_events w ON w.event_id = v.source_event_ids[1]
              WHERE w.received_at >= $1) x`,
    [startedAt],
  );
  const delivered = sim.stats().webhooks.delivered - before.delivered;
  return {
    phase: name,
    seconds: Number(wall.toFixed(1)),
    webhooksDelivered: delivered,
    webhooksPerSecond: Number((delivered / wall).toFixed(1)),
    fetchesPerWebhook: Number(((fetchCount() - before.fetches) / delivered).toFixed(3)),
    versions: Number(rows[0].n),
    freshnessP50ms: Math.round(rows[0].p50),
    freshnessP99ms: Math.round(rows[0].p99),
    receiptToFetchP50P99ms: [Math.round(rows[0].fetch_p50), Math.round(rows[0].fetch_p99)],
    fetchToRowP50P99ms: [Math.round(rows[0].load_p50), Math.round(rows[0].load_p99)],
    ingressProduceRequestsPerSecond: Math.round((produces.requests - before.produces.requests) / wall),
    ingressRecordsPerProduceRequest: Number(((produces.records - before.produces.records) / (produces.requests - before.produces.requests)).toFixed(2)),
    components: Object.fromEntries(
      Object.entries(components).map(([n, c]) => [n, { cpuPercentOfOneCore: Math.round((after[n] - before.ticks[n]) / wall), rssPeakMb: c.rssPeakMb, atEndMb: memory[n] }]),
    ),
  };
}

const warmUp = WARMUP_SECONDS > 0 ? [await phase('warm-up', 1, WARMUP_SECONDS)] : [];
const results = [...warmUp, await phase('steady', 1), await phase('storm-5x', 5)];
console.log(JSON.stringify({ date: new Date().toISOString(), machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`, apiLatencyMs: 20, offeredWebhooksPerSecond: RATE, results }, null, 2));

for (const c of Object.values(components)) c.child.kill('SIGTERM');
await Promise.all(Object.values(components).map((c) => new Promise((r) => c.child.once('exit', r))));
await sim.stop();
// Leave nothing behind: a broker holding every earlier run's partitions slows the next run.
const admin = new Kafka({ brokers: config.kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
await admin.connect();
const mine = (name) => name.startsWith(`${env.TOPIC_PREFIX}.`);
await admin.deleteTopics({ topics: (await admin.listTopics()).filter(mine) });
// A group whose member has not yet timed out cannot be deleted; it holds no partitions.
await admin.deleteGroups((await admin.listGroups()).groups.map((g) => g.groupId).filter(mine)).catch(() => undefined);
await admin.disconnect();
await pool.query(`DROP SCHEMA ${quoteIdent(config.databaseSchema)} CASCADE`);
await pool.end();
process.exit(0);
