#!/usr/bin/env node
// Enricher benchmark (not a test): `npm run bench:enricher` (builds dist/ first; needs the local
// stack: `billing-loader stack up`). Plain ESM over the compiled dist/.
//
// The sandbox billing service answers with 20 ms latency behind a request limit; the loader's
// budget is set below that limit. A real ingress receives the sandbox's webhooks and the
// enricher fetches. Two phases of BENCH_SECONDS each (default 30), both playing the sandbox's
// default scenario (the realistic event mix: signups, changes, invoices, payments, dunning...)
// with BENCH_STEP_MS between simulated instants (default 10):
//   steady: each webhook delivered once;
//   storm:  every webhook delivered 5 times (4 extra deliveries right after the first).
// Reported per phase: webhooks delivered, fetches made, fetches per webhook, 429s caused by the
// loader, versions published, and latency from the webhook's receipt (ingress received_at) to
// the snapshot record's timestamp (written just before its transaction commits), p50/p99.
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { createKafka } = await dist('kafka/client.js');
const { topicNames } = await dist('wire/topics.js');
const { createRegistry } = await dist('registry/registry.js');
const { createLogger } = await dist('log.js');
const { createHealth } = await dist('health.js');
const { createMetrics } = await dist('metrics.js');
const { startIngress } = await dist('ingress/ingress.js');
const { startEnricher } = await dist('enricher/enricher.js');
const { createBillingApiClient } = await dist('billing-api/client.js');
const { startSimulator } = await dist('simulator/simulator.js');

const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const STEP_MS = Number(process.env.BENCH_STEP_MS ?? 10);
const SIM_LIMIT = 300; // requests/s the sandbox allows
const BUDGET = 250; // requests/s the loader allows itself: below the limit

const prefix = `bench_${randomBytes(3).toString('hex')}`;
const config = configWithLocalStack({ ...process.env, TOPIC_PREFIX: prefix, LOG_LEVEL: 'error' });
const log = createLogger('error');
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'bench-enricher', log });
const registry = createRegistry(config.schemaRegistryUrl);
const sim = await startSimulator({ seed: 5, faults: { latencyMs: 20 }, rateLimit: { requestsPerSecond: SIM_LIMIT, burst: SIM_LIMIT }, delivery: { retryBaseDelayMs: 200 }, escalationSettings: true });
const ingress = await startIngress({ log, kafka, registry, health: createHealth(), metrics: createMetrics() }, { ...config, ingressPort: 0, host: '127.0.0.1' });
sim.setWebhookUrl(`${ingress.url}/webhooks`);
const api = createBillingApiClient({
  ...sim.clientOptions(),
  requestsPerSecond: BUDGET,
  burst: BUDGET,
  maxConcurrency: 16,
});
const enricher = await startEnricher({ kafka, registry, reader: api, log, metrics: createMetrics(), health: createHealth() }, config);

// Receipt times by event id (from the webhooks topic) and snapshot timestamps.
const names = topicNames(prefix);
const receivedAt = new Map();
const routedAt = new Map(); // event id → timestamp of its first fetch request (router hop)
const snapshots = [];
const collector = kafka.consumer({ groupId: `${prefix}.bench-collector`, readUncommitted: false, maxWaitTimeInMs: 50 });
await collector.connect();
await collector.subscribe({ topics: [names.webhooks, names.snapshots, `${prefix}.enricher.requests`], fromBeginning: true });
await collector.run({
  partitionsConsumedConcurrently: 6,
  eachMessage: async ({ topic, message }) => {
    if (topic.endsWith('.enricher.requests')) {
      const r = JSON.parse(message.value.toString());
      if (r.eventId && !routedAt.has(r.eventId)) routedAt.set(r.eventId, Number(message.timestamp));
      return;
    }
    const value = await registry.decode(message.value);
    if (topic === names.webhooks) receivedAt.set(value.event_id, value.received_at);
    else snapshots.push({ at: Number(message.timestamp), ids: value.source_event_ids });
  },
});


function count429() {
  return Object.values(sim.stats().requests.byRoute).reduce((n, outcomes) => n + (outcomes['429'] ?? 0), 0);
}
function fetchCount() {
  return Object.entries(sim.stats().requests.byRoute)
    .filter(([route]) => /^GET \/api\/v1\/\w+\/:id$/.test(route))
    .reduce((n, [, outcomes]) => n + Object.values(outcomes).reduce((a, b) => a + b, 0), 0);
}
async function waitQuiet() {
  let last = -1;
  for (;;) {
    await sleep(1000);
    const n = snapshots.length + fetchCount();
    if (n === last && sim.stats().webhooks.pending === 0) return;
    last = n;
  }
}
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function phase(name, copies) {
  const before = { delivered: sim.stats().webhooks.delivered, fetches: fetchCount(), r429: count429(), snapshots: snapshots.length, events: sim.stats().events };
  const started = Date.now();
  const stop = new AbortController();
  const run = sim.runScenario({ name: 'default', customers: 40, stepDelayMs: STEP_MS, loop: true, signal: stop.signal });
  let seq = sim.stats().events;
  while (Date.now() - started < SECONDS * 1000) {
    await sleep(5);
    // Copies are emitted synchronously here, so no scenario event slips in between; sim.events()
    // and sim.stats() copy everything, so the sequence is tracked here.
    const fresh = sim.eventsSince(seq);
    for (const e of fresh) for (let c = 1; c < copies; c++) sim.emit(e.payload);
    seq += fresh.length * copies;
  }
  stop.abort();
  await run;
  const sendSeconds = (Date.now() - started) / 1000;
  await waitQuiet();
  const phaseSnapshots = snapshots.slice(before.snapshots);
  const latencies = phaseSnapshots
    .map((s) => s.at - Math.min(...s.ids.map((id) => receivedAt.get(id) ?? Infinity)))
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  const hop = (f) => phaseSnapshots.map(f).filter(Number.isFinite).sort((a, b) => a - b);
  const firstId = (s) => s.ids.reduce((a, b) => ((receivedAt.get(a) ?? Infinity) <= (receivedAt.get(b) ?? Infinity) ? a : b), s.ids[0]);
  const routerHop = hop((s) => (routedAt.get(firstId(s)) ?? NaN) - (receivedAt.get(firstId(s)) ?? NaN));
  const fetcherHop = hop((s) => s.at - (routedAt.get(firstId(s)) ?? NaN));
  const delivered = sim.stats().webhooks.delivered - before.delivered;
  const fetches = fetchCount() - before.fetches;
  return {
    phase: name,
    seconds: Number(sendSeconds.toFixed(1)),
    events: sim.stats().events - before.events,
    webhooksDelivered: delivered,
    webhooksPerSecond: Number((delivered / sendSeconds).toFixed(1)),
    fetches,
    fetchesPerWebhook: Number((fetches / delivered).toFixed(3)),
    loader429s: count429() - before.r429,
    versions: phaseSnapshots.length,
    latencyP50ms: percentile(latencies, 50),
    latencyP99ms: percentile(latencies, 99),
    routerHopP50ms: percentile(routerHop, 50),
    routerHopP99ms: percentile(routerHop, 99),
    fetcherHopP50ms: percentile(fetcherHop, 50),
    fetcherHopP99ms: percentile(fetcherHop, 99),
  };
}

const results = [await phase('steady', 1), await phase('storm-5x', 5)];
console.log(JSON.stringify({ date: new Date().toISOString(), machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`, apiLatencyMs: 20, simLimitPerSecond: SIM_LIMIT, loaderBudgetPerSecond: BUDGET, scenarioStepMs: STEP_MS, results }, null, 2));

await collector.disconnect();
await enricher.stop();
await ingress.stop();
await api.close();
await sim.stop();
process.exit(0);
