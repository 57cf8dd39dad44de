#!/usr/bin/env node
// Scale-out throughput (not a test): `npm run bench:scale-throughput` (builds dist/ first; needs
// the local stack). Plain ESM over the compiled dist/.
//
// Versions per second of 1 and of 3 enrichers, and of 1 and of 3 sinks, each instance a separate
// `billing-loader` process (one group per role), when the billing API is not the limit: the
// sandbox with no latency and a request limit far above a budget of 100,000 requests/s.
// Enricher phases: BENCH_RESOURCES (default 20,000) customers, one fetch request each, waiting in
// the requests topic of fresh topics; the rate is the fetcher group's committed progress between
// 10 % and 90 % of the backlog (start-up and the first rebalances excluded). Sink phases: the
// snapshots the first enricher phase wrote, into a fresh schema per phase; the rate is rows of
// resource_versions between 10 % and 90 %. Beside each rate: the machine's CPU use over the same
// interval (all cores: 2.0 is both cores busy) and the instances' own share of it.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { createKafka, defaultPartitioner } = await dist('kafka/client.js');
const { ensureTopics } = await dist('kafka/topics.js');
const { enricherTopicSpecs, enricherTopics, pipelineTopicSpecs, topicNames } = await dist('wire/topics.js');
const { encodeFetchRequest } = await dist('wire/fetch-request.js');
const { createLogger } = await dist('log.js');
const { startSimulator } = await dist('simulator/simulator.js');
const { createPool } = await dist('db/pool.js');
const { migrate } = await dist('db/migrate.js');
const { fetcherGroupId } = await dist('enricher/enricher.js');

const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 20_000);
const log = createLogger('error');
const TICKS = 100; // USER_HZ: /proc times are in 1/100 s

const machineBusy = () => {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const n = fields.map(Number);
  return { busy: n.reduce((a, b) => a + b, 0) - n[3] - n[4], at: Date.now() };
};
const processTicks = (pid) => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
};
async function freePort() {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  return port;
}

async function startInstances(role, count, env) {
  const children = [];
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    const stateDir = mkdtempSync(join(tmpdir(), 'bench-throughput-'));
    const child = spawn(process.execPath, [join(root, 'bin', 'billing-loader.js'), role], {
      env: { ...process.env, ...env, LOG_LEVEL: 'error', ENRICHER_PORT: String(port), SINK_PORT: String(port), ENRICHER_STATE_DIR: stateDir },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push({ child, stateDir });
  }
  return {
    pids: () => children.map((c) => c.child.pid),
    async stop() {
      await Promise.all(children.map(async ({ child }) => {
        if (child.exitCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      }));
      for (const c of children) rmSync(c.stateDir, { recursive: true, force: true });
    },
  };
}

/** Polls `progress()` until `total`; the rate and CPU between 10 % and 90 %. */
async function measure(progress, total, pids) {
  const started = Date.now();
  let from;
  for (;;) {
    const done = await progress();
    if (!from && done >= total * 0.1) from = { done, machine: machineBusy(), own: pids().reduce((a, p) => a + processTicks(p), 0) };
    if (from && done >= total * 0.9) {
      const machine = machineBusy();
      const own = pids().reduce((a, p) => a + processTicks(p), 0);
      const seconds = (machine.at - from.machine.at) / 1000;
      return {
        versionsPerSecond: Math.round((done - from.done) / seconds),
        machineCpu: Number(((machine.busy - from.machine.busy) / TICKS / seconds).toFixed(2)),
        instancesCpu: Number(((own - from.own) / TICKS / seconds).toFixed(2)),
        totalSeconds: Number(((Date.now() - started) / 1000).toFixed(1)),
      };
    }
    if (Date.now() - started > 600_000) throw new Error(`no progress to ${total}: ${done}`);
    await sleep(250);
  }
}

const sim = await startSimulator({ seed: 7, rateLimit: { requestsPerSecond: 0 } });
const customers = Array.from({ length: RESOURCES }, () => sim.billing.signup({ trial: false }).customerId);
const base = configWithLocalStack({ ...process.env, LOG_LEVEL: 'error' });
const kafka = createKafka({ brokers: base.kafkaBrokers, clientId: 'bench-throughput', log });
const admin = kafka.admin();
await admin.connect();
const commonEnv = {
  KAFKA_BROKERS: base.kafkaBrokers.join(','),
  SCHEMA_REGISTRY_URL: base.schemaRegistryUrl,
  DATABASE_URL: base.databaseUrl,
  BILLING_API_URL: sim.baseUrl,
  BILLING_AUTH_URL: sim.authUrl,
  BILLING_CLIENT_ID: sim.clientId,
  BILLING_CLIENT_SECRET: sim.clientSecret,
  BILLING_API_REQUESTS_PER_SECOND: '100000',
  BILLING_API_MAX_CONCURRENCY: '64',
};

async function backlog(prefix) {
  const internal = enricherTopics(prefix);
  const specs = pipelineTopicSpecs(topicNames(prefix));
  await ensureTopics(admin, [specs.webhooks, specs.snapshots, specs.webhooksDlq, ...enricherTopicSpecs(internal)]);
  const producer = kafka.producer({ createPartitioner: defaultPartitioner });
  await producer.connect();
  const now = Date.now();
  for (let i = 0; i < customers.length; i += 2000) {
    const messages = customers.slice(i, i + 2000).map((id) => encodeFetchRequest({ type: 'Customer', id, eventId: randomUUID(), event: 'CustomerChanged', receivedAt: now, source: null }));
    await producer.send({ topic: internal.requests, acks: -1, messages });
  }
  await producer.disconnect();
  return internal.requests;
}

async function committed(groupId, topic) {
  const [c] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return (c?.partitions ?? []).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
}

const results = { enricher: {}, sink: {} };
const prefixes = [];
for (const count of [1, 3]) {
  const prefix = `bench_${randomBytes(3).toString('hex')}`;
  prefixes.push(prefix);
  const topic = await backlog(prefix);
  const running = await startInstances('enricher', count, { ...commonEnv, TOPIC_PREFIX: prefix });
  results.enricher[count] = await measure(() => committed(fetcherGroupId(prefix), topic), RESOURCES, running.pids);
  await running.stop();
  console.error(`${count} enricher(s): ${JSON.stringify(results.enricher[count])}`);
}

const pool = createPool({ databaseUrl: base.databaseUrl, applicationName: 'bench-throughput', log, max: 2 });
const schemas = [];
for (const count of [1, 3]) {
  const schema = `bench_tp_${randomBytes(3).toString('hex')}`;
  schemas.push(schema);
  await migrate(pool, { schema, log });
  const running = await startInstances('sink', count, { ...commonEnv, TOPIC_PREFIX: prefixes[0], DATABASE_SCHEMA: schema, SINK_GROUP_ID: `${schema}.sink` });
  const rows = async () => (await pool.query(`SELECT count(*)::int AS n FROM ${schema}.resource_versions`)).rows[0].n;
  results.sink[count] = await measure(rows, RESOURCES, running.pids);
  await running.stop();
  console.error(`${count} sink(s): ${JSON.stringify(results.sink[count])}`);
}

for (const schema of schemas) await pool.query(`DROP SCHEMA ${schema} CASCADE`);
await pool.end();
const topics = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(`${p}.`)));
await admin.deleteTopics({ topics });
await admin.disconnect();
await sim.stop();
const ratio = (role) => Number((results[role][3].versionsPerSecond / results[role][1].versionsPerSecond).toFixed(2));
console.log(JSON.stringify({ date: new Date().toISOString(), machine: `${cpus().length} cores (shared), ${Math.round(totalmem() / 2 ** 30)} GiB`, resources: RESOURCES, results, ratio3to1: { enricher: ratio('enricher'), sink: ratio('sink') } }, null, 2));
