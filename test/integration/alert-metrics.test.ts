import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { VERSION } from '../../src/version.js';
import { testConfig } from '../helpers/environment.js';
import { freePort } from '../helpers/free-port.js';
import { waitFor } from '../helpers/wait-for.js';
import { alertRules, dashboardExprs, exportedAs, metricNames, metricTypes, sampleLabels, selectors } from './alert-files.js';

/**
 * The ingress, the enricher and the sink, each started from the built CLI as an operator would,
 * with the sandbox's webhooks flowing through them into the warehouse. Then:
 * - every metric name the shipped alert rules and the Grafana dashboard use is on the /metrics
 *   page of one of them, so a renamed metric fails here rather than silencing an alert;
 * - every line each one wrote, on stdout and stderr, from start to a drained stop, is a JSON
 *   object naming its service and the build's version: a log pipeline can parse all of it; and
 *   the same for `run`, the three in one process.
 */
type Component = 'ingress' | 'enricher' | 'sink';
const COMPONENTS: Component[] = ['sink', 'enricher', 'ingress'];
/** Series Prometheus makes itself, per scrape target. */
const PROMETHEUS_OWN = new Set(['up']);

interface Running {
  child: ChildProcess;
  port: number;
  stdout: string;
  stderr: string;
}

const config = testConfig();
let pool: pg.Pool;
let sim: Simulator;
const running = new Map<Component, Running>();
let env: NodeJS.ProcessEnv;
const runSchema = `${config.databaseSchema}_run`;

/** `node bin/billing-loader.js <command>`, its stdout and stderr kept whole. */
function spawnCommand(command: string, commandEnv: NodeJS.ProcessEnv, port: number): Running {
  const child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), command], { cwd: packageRoot, env: commandEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  const r: Running = { child, port, stdout: '', stderr: '' };
  child.stdout?.on('data', (d: Buffer) => (r.stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (r.stderr += d.toString()));
  return r;
}

async function waitReady(name: string, r: Running): Promise<void> {
  await waitFor(
    async () => {
      if (r.child.exitCode !== null) throw new Error(`${name} exited with ${r.child.exitCode}: ${r.stderr.slice(-2000)}`);
      return (await fetch(`http://127.0.0.1:${r.port}/readyz`)).status === 200;
    },
    { timeoutMs: 120_000, intervalMs: 250, what: `${name} ready` },
  );
}

/** SIGTERM; then the process must have drained (exit 0, "stopped") and written only JSON lines naming `service` and the build. */
async function expectStoppedWithJsonLines(r: Running, service: string): Promise<void> {
  const exited = once(r.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  r.child.kill('SIGTERM');
  const [code] = await exited;
  expect(code, `${service} exit code; ${r.stderr.slice(-2000)}`).toBe(0);
  const lines = `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => l.trim() !== '');
  expect(lines.length, service).toBeGreaterThan(1);
  for (const line of lines) {
    let parsed: unknown;
    expect(() => (parsed = JSON.parse(line)), `${service} wrote a line that is not JSON: ${line}`).not.toThrow();
    expect(parsed, line).toMatchObject({ service, version: VERSION, level: expect.any(String), msg: expect.any(String) });
  }
  expect(r.stderr, service).toContain('"msg":"stopped"');
}

beforeAll(async () => {
  pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'alert-metrics-test', log: silentLogger, max: 2 });
  await migrate(pool, { schema: config.databaseSchema, log: silentLogger });
  const ports = { ingress: await freePort(), enricher: await freePort(), sink: await freePort() };
  sim = await startSimulator({ seed: 31, rateLimit: { requestsPerSecond: 0 }, webhookUrl: `http://127.0.0.1:${ports.ingress}/webhooks`, delivery: { retryBaseDelayMs: 100 } });
  env = {
    ...process.env,
    KAFKA_BROKERS: config.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: config.schemaRegistryUrl,
    DATABASE_URL: config.databaseUrl,
    DATABASE_SCHEMA: config.databaseSchema,
    TOPIC_PREFIX: config.topicPrefix,
    LOG_LEVEL: 'info',
    BILLING_API_URL: sim.baseUrl,
    BILLING_AUTH_URL: sim.authUrl,
    BILLING_CLIENT_ID: sim.clientId,
    BILLING_CLIENT_SECRET: sim.clientSecret,
    BILLING_API_REQUESTS_PER_SECOND: '200',
    INGRESS_PORT: String(ports.ingress),
    ENRICHER_PORT: String(ports.enricher),
    SINK_PORT: String(ports.sink),
  };
  for (const component of COMPONENTS) running.set(component, spawnCommand(component, env, ports[component]));
  for (const [name, r] of running) await waitReady(name, r);
  await sim.runScenario({ name: 'default', customers: 4 });
  const versions = async () => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(config.databaseSchema)}.resource_versions`)).rows[0]?.n ?? 0;
  await waitFor(async () => (await versions()) > 0, { timeoutMs: 120_000, intervalMs: 250, what: 'versions in the warehouse' });
}, 300_000);

afterAll(async () => {
  for (const r of running.values()) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
  await sim?.stop();
  await pool?.query(`DROP SCHEMA IF EXISTS ${quoteIdent(config.databaseSchema)} CASCADE`);
  await pool?.query(`DROP SCHEMA IF EXISTS ${quoteIdent(runSchema)} CASCADE`);
  await pool?.end();
});

describe('the metrics the alert rules and the dashboard use', () => {
  const used = () => [
    ...alertRules().map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
    ...dashboardExprs().map((e) => ({ where: `panel ${e.panel}`, expr: e.expr })),
  ];
  const pages = () => Promise.all([...running].map(async ([name, r]) => ({ name, page: await (await fetch(`http://127.0.0.1:${r.port}/metrics`)).text() })));

  it('are all exported by the running ingress, enricher and sink', async () => {
    const types = new Map<string, string>();
    for (const { name, page } of await pages()) {
      const own = metricTypes(page);
      expect(own.size, `${name} /metrics`).toBeGreaterThan(0);
      for (const [metric, type] of own) types.set(metric, type);
    }
    const names = used().flatMap(({ where, expr }) => metricNames(expr).map((metric) => ({ where, metric })));
    expect(names.length).toBeGreaterThan(used().length - 1);
    const missing = names.filter(({ metric }) => !PROMETHEUS_OWN.has(metric) && exportedAs(metric, types) === undefined);
    expect(missing).toEqual([]);
  });

  it('are matched on labels their series carry (where the run gave the metric series)', async () => {
    const labels = new Map<string, Set<string>>();
    for (const { page } of await pages()) {
      for (const [metric, names] of sampleLabels(page)) labels.set(metric, new Set([...(labels.get(metric) ?? []), ...names]));
    }
    // instance and job are the scrape's, added by Prometheus.
    const wrong: string[] = [];
    let checked = 0;
    for (const { where, expr } of used()) {
      for (const { metric, labels: matched } of selectors(expr)) {
        const carried = labels.get(metric);
        if (!carried) continue;
        checked++;
        for (const label of matched) if (label !== 'instance' && label !== 'job' && !carried.has(label)) wrong.push(`${where}: ${metric}{${label}} (its series carry ${[...carried].join(', ') || 'no label'})`);
      }
    }
    expect(wrong).toEqual([]);
    // Not vacuous: the scenario gave series to the labelled metrics most rules match on.
    expect(checked).toBeGreaterThan(20);
  });
});

describe('the components\' output', () => {
  it('is JSON lines only, on stdout and stderr, each with its service and the version, from start to a drained stop', async () => {
    for (const component of ['ingress', 'enricher', 'sink'] as Component[]) await expectStoppedWithJsonLines(running.get(component) as Running, component);
  }, 120_000);

  it('is JSON lines only for `run` (all three in one process) too', async () => {
    await migrate(pool, { schema: runSchema, log: silentLogger });
    const port = await freePort();
    const r = spawnCommand('run', { ...env, TOPIC_PREFIX: `${config.topicPrefix}_run`, DATABASE_SCHEMA: runSchema, INGRESS_PORT: String(port) }, port);
    try {
      await waitReady('run', r);
      const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ Event: 'ContractChanged', ContractId: 'log-lines' }) });
      expect(res.status).toBe(200);
      await expectStoppedWithJsonLines(r, 'run');
    } finally {
      if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    }
  }, 180_000);
});
