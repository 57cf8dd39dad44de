#!/usr/bin/env node
// Scale benchmark (not a test): `npm run bench:scale` (builds dist/ first; needs the local stack:
// `billing-loader stack up`). Plain ESM over the compiled dist/.
//
// For each size in BENCH_SCALE_SIZES (default 1000000; e.g. 1000000,10000000), on fresh topics:
// writes that many heads into `<prefix>.enricher.heads` in the topic's real record format
// (keys Type:id, partitioned as the fetcher's producers do), then starts an enricher, alone in
// its own process, twice on the same ENRICHER_STATE_DIR: first with an empty directory (a new
// instance: it reads every head), then again (a restart: it resumes from its cache's mark).
// Reported per start: the time from the process's start until its heads were caught up, the
// head records it read, its peak and settled memory (RSS; anonymous and LMDB's file-backed
// pages apart), and the disk the cache takes.
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { createKafka, defaultPartitioner } = await dist('kafka/client.js');
const { ensureTopics } = await dist('kafka/topics.js');
const { enricherTopicSpecs, enricherTopics, pipelineTopicSpecs, topicNames } = await dist('wire/topics.js');
const { encodeHead } = await dist('enricher/head-store.js');
const { createLogger } = await dist('log.js');

const SIZES = (process.env.BENCH_SCALE_SIZES ?? '1000000').split(',').map(Number);
const TYPES = ['Invoice', 'PaymentTransaction', 'Order', 'Contract', 'Customer', 'Dunning'];

async function loadHeads(prefix, count) {
  const config = configWithLocalStack({ ...process.env, TOPIC_PREFIX: prefix, LOG_LEVEL: 'error' });
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'bench-scale-load', log: createLogger('error') });
  const internal = enricherTopics(prefix);
  const admin = kafka.admin();
  await admin.connect();
  const specs = pipelineTopicSpecs(topicNames(prefix));
  await ensureTopics(admin, [specs.webhooks, specs.snapshots, specs.webhooksDlq, ...enricherTopicSpecs(internal)]);
  await admin.disconnect();
  // Every key is distinct, so the order of the sends does not matter: several are in flight at once.
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const started = Date.now();
  const BATCH = 20_000;
  const now = Date.now();
  const inFlight = new Set();
  for (let i = 0; i < count; i += BATCH) {
    const messages = [];
    for (let j = i; j < Math.min(count, i + BATCH); j++) {
      const contentHash = createHash('sha256').update(`body-${j}`).digest('hex');
      messages.push({ key: `${TYPES[j % TYPES.length]}:r-${j.toString(36)}-${(j * 2654435761 % 2 ** 32).toString(16)}`, value: encodeHead({ version: 1 + (j % 5), contentHash, deleted: j % 50 === 0, fetchedAt: now - j }) });
    }
    const send = producer.send({ topic: internal.heads, acks: -1, messages }).finally(() => inFlight.delete(send));
    inFlight.add(send);
    if (inFlight.size >= 4) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await producer.disconnect();
  return { config, kafka, internal, loadSeconds: (Date.now() - started) / 1000 };
}

function startOnce(prefix, stateDir) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--heap-growing-percent=50', '--expose-gc', join(root, 'bench/scale/enricher-restore.mjs')], {
      env: { ...process.env, TOPIC_PREFIX: prefix, ENRICHER_STATE_DIR: stateDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`enricher process exited with ${code}: ${out}`))));
  });
}

const results = [];
for (const size of SIZES) {
  const prefix = `bench_${randomBytes(3).toString('hex')}`;
  const stateDir = mkdtempSync(join(tmpdir(), 'bench-scale-state-'));
  const { kafka, loadSeconds } = await loadHeads(prefix, size);
  console.error(`${size} heads loaded in ${loadSeconds.toFixed(1)} s`);
  const empty = await startOnce(prefix, stateDir);
  console.error(`from an empty store: ${JSON.stringify(empty)}`);
  const diskMb = Math.round(Number(execFileSync('du', ['-sk', stateDir]).toString().split('\t')[0]) / 1024);
  const warm = await startOnce(prefix, stateDir);
  console.error(`from its local store: ${JSON.stringify(warm)}`);
  results.push({ heads: size, loadSeconds: Number(loadSeconds.toFixed(1)), storeDiskMb: diskMb, emptyStore: empty, warmStore: warm });
  rmSync(stateDir, { recursive: true, force: true });
  // The benchmark's topics hold gigabytes at the larger sizes: give the broker its disk back.
  const admin = kafka.admin();
  await admin.connect();
  const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}.`));
  await admin.deleteTopics({ topics });
  await admin.disconnect();
}
console.log(JSON.stringify({ date: new Date().toISOString(), machine: `${cpus().length} cores (shared), ${Math.round(totalmem() / 2 ** 30)} GiB`, results }, null, 2));
