#!/usr/bin/env node
// Backlog benchmark (not a test): `npm run bench:backlog` (builds dist/ first; needs the local
// stack: `billing-loader stack up`). Plain ESM over the compiled dist/.
//
// What a replay (`replay --group enricher --to-beginning`) or the end of an outage leaves: fetch
// requests naming BENCH_RESOURCES (default 10,000) distinct resources waiting in the enricher's
// request topic. The enricher then starts with the default API budget (20 requests/s) against
// the sandbox (20 ms latency, a request limit above the budget) and drains them. Reported: the
// time from start to the last resource's first version, the reads made, and the ratio of the
// budget's limit (resources / 20 s: no drain can be faster) to the time measured (1.0 is the
// budget fully used; less is time lost to batches, transactions and rebalances).
import { randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { createKafka, defaultPartitioner } = await dist('kafka/client.js');
const { ensureTopics } = await dist('kafka/topics.js');
const { pipelineTopicSpecs, topicNames } = await dist('wire/topics.js');
const { createRegistry } = await dist('registry/registry.js');
const { createLogger } = await dist('log.js');
const { createHealth } = await dist('health.js');
const { createMetrics } = await dist('metrics.js');
const { startEnricher } = await dist('enricher/enricher.js');
const { enricherTopicSpecs, enricherTopics } = await dist('wire/topics.js');
const { encodeFetchRequest } = await dist('wire/fetch-request.js');
const { createBillingApiClient } = await dist('billing-api/client.js');
const { startSimulator } = await dist('simulator/simulator.js');

const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 10_000);
const BUDGET = 20; // requests/s: the loader's default (BILLING_API_REQUESTS_PER_SECOND)
const SIM_LIMIT = 25; // requests/s the sandbox allows: above the budget

const prefix = `bench_${randomBytes(3).toString('hex')}`;
const config = configWithLocalStack({ ...process.env, TOPIC_PREFIX: prefix, LOG_LEVEL: 'error' });
const log = createLogger('error');
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'bench-backlog', log });
const registry = createRegistry(config.schemaRegistryUrl);
const sim = await startSimulator({ seed: 11, faults: { latencyMs: 20 }, rateLimit: { requestsPerSecond: SIM_LIMIT, burst: SIM_LIMIT } });
const customers = Array.from({ length: RESOURCES }, () => sim.billing.signup({ trial: false }).customerId);
sim.resetRequestStats();

// The backlog: one request per resource, written before the enricher starts.
const internal = enricherTopics(prefix);
const admin = kafka.admin();
await admin.connect();
await ensureTopics(admin, [...enricherTopicSpecs(internal), pipelineTopicSpecs(topicNames(prefix)).snapshots]);
await admin.disconnect();
const producer = kafka.producer({ createPartitioner: defaultPartitioner });
await producer.connect();
const now = Date.now();
for (let i = 0; i < customers.length; i += 1000) {
  const messages = customers.slice(i, i + 1000).map((id) => encodeFetchRequest({ type: 'Customer', id, eventId: `bench-${id}`, event: 'CustomerChanged', receivedAt: now, source: null }));
  await producer.send({ topic: internal.requests, acks: -1, messages });
}
await producer.disconnect();

const names = topicNames(prefix);
const versioned = new Set();
const collector = kafka.consumer({ groupId: `${prefix}.bench-collector`, readUncommitted: false, maxWaitTimeInMs: 100 });
await collector.connect();
await collector.subscribe({ topics: [names.snapshots], fromBeginning: true });
await collector.run({
  partitionsConsumedConcurrently: 6,
  eachMessage: async ({ message }) => {
    const value = await registry.decode(message.value);
    versioned.add(value.resource_id);
  },
});

const api = createBillingApiClient({ ...sim.clientOptions(), requestsPerSecond: BUDGET });
const started = Date.now();
const enricher = await startEnricher({ kafka, registry, reader: api, log, metrics: createMetrics(), health: createHealth() }, config);
const progress = [];
while (versioned.size < RESOURCES) {
  await sleep(1000);
  progress.push(versioned.size);
  if (progress.length > 3 * (RESOURCES / BUDGET) + 120) throw new Error(`no drain after ${progress.length} s: ${versioned.size} of ${RESOURCES} versioned`);
}
const seconds = (Date.now() - started) / 1000;
const reads = Object.values(sim.stats().requests.byRoute['GET /api/v1/Customers/:id'] ?? {}).reduce((a, b) => a + b, 0);
const limitSeconds = RESOURCES / BUDGET;
console.log(
  JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
      resources: RESOURCES,
      budgetPerSecond: BUDGET,
      apiLatencyMs: 20,
      drainSeconds: Number(seconds.toFixed(1)),
      limitSeconds,
      ratio: Number((limitSeconds / seconds).toFixed(3)),
      reads,
      readsPerResource: Number((reads / RESOURCES).toFixed(3)),
      versionedAt60s: progress[59],
      versionedAt300s: progress[299],
    },
    null,
    2,
  ),
);

await collector.disconnect();
await enricher.stop();
await api.close();
await sim.stop();
