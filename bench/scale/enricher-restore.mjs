#!/usr/bin/env node
// One enricher, started alone in this process by run.mjs: prints, as one JSON line, how long
// it took from the process's start until its heads were caught up, how many head records it read
// (by mode), and its memory (peak and settled; anonymous memory apart from LMDB's file-backed map).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { createKafka } = await dist('kafka/client.js');
const { createRegistry } = await dist('registry/registry.js');
const { createLogger } = await dist('log.js');
const { createHealth } = await dist('health.js');
const { createMetrics } = await dist('metrics.js');
const { startEnricher } = await dist('enricher/enricher.js');

const memory = () => {
  const status = readFileSync('/proc/self/status', 'utf8');
  const mb = (field) => Math.round(Number(status.match(new RegExp(`${field}:\\s+(\\d+)`))?.[1] ?? 0) / 1024);
  return { rss: mb('VmRSS'), anon: mb('RssAnon'), file: mb('RssFile') };
};
const peak = { rss: 0, anon: 0, file: 0 };
const sample = () => {
  const m = memory();
  for (const k of Object.keys(peak)) peak[k] = Math.max(peak[k], m[k]);
  return m;
};
const sampler = setInterval(sample, 100);

const config = configWithLocalStack({ ...process.env, LOG_LEVEL: 'error' });
const log = createLogger('error');
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'bench-scale', log });
const registry = createRegistry(config.schemaRegistryUrl);
const metrics = createMetrics();
// No request reaches the fetcher in this benchmark: a read would be a bug of the benchmark.
const reader = { getResource: async () => { throw new Error('the restore benchmark reads nothing'); } };
const enricher = await startEnricher({ kafka, registry, reader, log, metrics, health: createHealth() }, config);
let restored;
while (!restored) {
  const values = (await metrics.getSingleMetric('billing_loader_enricher_heads_restored_total').get()).values;
  if (values.length > 0) restored = Object.fromEntries(values.map((v) => [v.labels.mode, v.value]));
  else await sleep(50);
}
const readyMs = Math.round(performance.now());
await sleep(3000);
globalThis.gc?.();
await sleep(500);
const settled = sample();
clearInterval(sampler);
console.log(JSON.stringify({ readyMs, restored, peakMb: peak, settledMb: settled }));
await enricher.stop();
process.exit(0);
