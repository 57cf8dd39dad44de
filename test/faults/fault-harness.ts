import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import { expect } from 'vitest';
import type { Config } from '../../src/config.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { errorMessage } from '../../src/errors.js';
import { readToEnd } from '../../src/kafka/read-to-end.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { createRegistry } from '../../src/registry/registry.js';
import type { ScenarioResult } from '../../src/simulator/scenario-runner.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/simulator.js';
import { packageRoot } from '../../src/package-root.js';
import { delayForwarderGroupId, enricherGroupId, fetcherGroupId } from '../../src/enricher/enricher.js';
import { sinkGroupId } from '../../src/sink/sink.js';
import { enricherTopics, topicNames } from '../../src/wire/topics.js';
import { testConfig } from '../helpers/environment.js';
import { drainPipeline, groupPositions, unexpectedDeadLetters } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';
import { compareWarehouseToTruth, compareWebhooksToDeliveries, type TruthReport, type WebhookCoverage } from '../helpers/warehouse-truth.js';
import { freePort } from '../helpers/free-port.js';

export type Component = 'ingress' | 'enricher' | 'sink';
const COMPONENTS: Component[] = ['sink', 'enricher', 'ingress'];

/** One line of the fault matrix (README), also written to test/faults/results/<fault>.json. */
export interface FaultFigures {
  fault: string;
  /** Deliveries the ingress answered with a 2xx. */
  acknowledged: number;
  /** Acknowledged deliveries missing from webhook_events. */
  lost: number;
  /** Consecutive versions of one resource with the same content. */
  duplicateVersions: number;
  /** Versions missing from 1..n. */
  gaps: number;
  /** Rows of webhook_events beyond the acknowledged deliveries (a 503'd write that landed anyway, then retried). */
  extraWebhookRows: number;
  /** Deliveries the simulator gave up on (attempts exhausted). */
  dropped: number;
  /** DLQ records other than the expected give-ups below. */
  deadLetters: number;
  /** The enricher's give-ups of ids no reader could see (created and deleted before any read): expected, not a loss. */
  notFoundGiveUps: number;
  objects: number;
  versions: number;
  /** Attempts that got no 2xx (refused connection, 503, timeout): the sender retried them. */
  failedAttempts: number;
  durationMs: number;
}

export interface FaultRunOptions {
  /** Name in the matrix and of the results file. */
  fault: string;
  seed?: number;
  /** Overrides of the configuration (e.g. KAFKA_BROKERS of a private broker). */
  env?: Record<string, string>;
  /** Extra environment of one component's process. */
  componentEnv?: Partial<Record<Component, Record<string, string>>>;
  sim?: SimulatorOptions;
  /** Processes per component (default 1 each), each with its own ops port and, for an enricher, its own ENRICHER_STATE_DIR. */
  instances?: Partial<Record<Component, number>>;
}

export interface FaultRun {
  config: Config;
  sim: Simulator;
  pool: pg.Pool;
  kafka: Kafka;
  /** Spawns the component (`node bin/billing-loader.js <component>`) and waits for its /readyz. */
  start(component: Component, instance?: number): Promise<void>;
  /** kill -9, and waits for the process to be gone. */
  kill(component: Component, instance?: number): Promise<void>;
  /** SIGTERM, and waits for the process to exit; fails unless it drained and exited with 0. */
  terminate(component: Component, instance?: number): Promise<void>;
  /** Plays the default scenario (resolves when the last event is emitted). */
  playScenario(): Promise<ScenarioResult>;
  /**
   * Waits until `webhook_events` holds at least `n` rows and `resource_versions` at least one: the
   * pipeline is flowing end to end. Webhook rows alone come straight from the ingress through the
   * sink: a fault could then strike an enricher still fencing and restoring its heads, which
   * has published nothing yet, and the test would not exercise what it names.
   */
  waitForRows(n: number): Promise<void>;
  /** Resolves once `extra` more events were emitted since the call: the scenario went on meanwhile. */
  eventsLater(extra: number): Promise<void>;
  /** Drains the pipeline, compares the warehouse with the truth, writes the figures. */
  finish(): Promise<{ figures: FaultFigures; truth: TruthReport; webhooks: WebhookCoverage }>;
  /** `http://127.0.0.1:<port>` of a component's /healthz, /readyz, /metrics. */
  opsUrl(component: Component, instance?: number): string;
  /** Last lines each process wrote on stderr (for failure messages). */
  logs(): string;
  stop(): Promise<void>;
}

const processName = (component: Component, instance: number) => (instance === 0 ? component : `${component}-${instance + 1}`);

/**
 * The pipeline as three separate processes (the built CLI: `npm test` builds dist/ first; run
 * `npm run build` when developing), a simulator in this process pointed at them with small
 * retry delays and some late, duplicated and reordered deliveries, a migrated private schema
 * and private topics. Each fault test starts it, plays the scenario, does its damage, and
 * calls `finish()`.
 */
export async function startFaultRun(options: FaultRunOptions): Promise<FaultRun> {
  const started = Date.now();
  // FAULT_LOG_DIR=<dir>: every component's whole log, appended to <dir>/<fault>.<component>.log,
  // at FAULT_LOG_LEVEL (default info; debug adds kafkajs's group joins and fetch decisions).
  const logDir = process.env.FAULT_LOG_DIR;
  if (logDir) mkdirSync(logDir, { recursive: true });
  const config = testConfig({ LOG_LEVEL: logDir ? (process.env.FAULT_LOG_LEVEL ?? 'info') : 'warn', ...options.env });
  const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: `fault-${options.fault}`, log: silentLogger, max: 3 });
  // kafkajs's reconnection noise while a broker is down is expected here: keep it out of the output.
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: `fault-${options.fault}`, log: silentLogger });
  await migrate(pool, { schema: config.databaseSchema, log: silentLogger });
  const counts: Record<Component, number> = { ingress: 1, enricher: 1, sink: 1, ...options.instances };
  // One process per (component, instance); the first instance of each is named by the component alone.
  const names = COMPONENTS.flatMap((c) => Array.from({ length: counts[c] }, (_, i) => processName(c, i)));
  const ports = new Map<string, number>();
  for (const name of names) ports.set(name, await freePort());
  const portOf = (component: Component, instance = 0) => ports.get(processName(component, instance)) ?? 0;
  // Several enrichers get a state directory each, as on separate hosts; a single one keeps the default.
  const stateDirs = counts.enricher > 1 ? Array.from({ length: counts.enricher }, () => mkdtempSync(join(tmpdir(), `fault-${options.fault}-`))) : [];
  // A process that outlives its own SHUTDOWN_TIMEOUT_MS is asked for a diagnostic report (SIGUSR2,
  // node's default report signal) before it is killed: whether its event loop still ran (stuckReport).
  const reportDir = mkdtempSync(join(tmpdir(), `fault-${options.fault}-reports-`));
  const sim = await startSimulator({
    seed: options.seed ?? 11,
    rateLimit: { requestsPerSecond: 0 },
    webhookUrl: `http://127.0.0.1:${portOf('ingress')}/webhooks`,
    ...options.sim,
    // Retries start at 100 ms and double (spec 6.1): 12 attempts span about 200 s, longer than any outage here.
    delivery: { retryBaseDelayMs: 100, attemptTimeoutMs: 10_000, duplicateRate: 0.1, lateRate: 0.05, lateDelayMs: 1000, reorderRate: 0.1, ...options.sim?.delivery },
  });
  const children = new Map<string, ChildProcess>();
  const output = new Map<string, string>(names.map((n) => [n, '']));

  const env = (component: Component, instance: number): NodeJS.ProcessEnv => ({
    ...process.env,
    KAFKA_BROKERS: config.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: config.schemaRegistryUrl,
    DATABASE_URL: config.databaseUrl,
    DATABASE_SCHEMA: config.databaseSchema,
    TOPIC_PREFIX: config.topicPrefix,
    LOG_LEVEL: config.logLevel,
    BILLING_API_URL: sim.baseUrl,
    BILLING_AUTH_URL: sim.authUrl,
    BILLING_CLIENT_ID: sim.clientId,
    BILLING_CLIENT_SECRET: sim.clientSecret,
    BILLING_API_REQUESTS_PER_SECOND: '200',
    BILLING_API_MAX_CONCURRENCY: '16',
    INGRESS_PORT: String(portOf('ingress')),
    ENRICHER_PORT: String(portOf('enricher', component === 'enricher' ? instance : 0)),
    SINK_PORT: String(portOf('sink', component === 'sink' ? instance : 0)),
    ...(component === 'enricher' && stateDirs[instance] ? { ENRICHER_STATE_DIR: stateDirs[instance] } : {}),
    // Rereads of 404s on the scale of a test run: the drain waits for every one of them.
    ENRICHER_NOT_FOUND_WINDOW_MS: '3000',
    // Several components share two cores here: the drain gets the room of a generous supervisor.
    SHUTDOWN_TIMEOUT_MS: '30000',
    ENRICHER_GONE_CONFIRM_MS: '1000',
    // A commit hidden behind a transaction left open is closed well within the drain's wait.
    ENRICHER_HANGING_TRANSACTION_MS: '30000',
    NODE_OPTIONS: [process.env.NODE_OPTIONS, '--report-on-signal', `--report-directory=${reportDir}`].filter(Boolean).join(' '),
    ...options.componentEnv?.[component],
  });

  const start = async (component: Component, instance = 0) => {
    const name = processName(component, instance);
    if (!ports.has(name)) throw new Error(`${name}: the run has ${counts[component]} ${component} instance(s)`);
    const child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), component], { cwd: packageRoot, env: env(component, instance), stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d: Buffer) => output.set(name, ((output.get(name) ?? '') + d.toString()).slice(-8000)));
    // The tail kept above explains a stuck stage; a lost version needs the whole story.
    if (logDir) child.stderr?.pipe(createWriteStream(join(logDir, `${options.fault}.${name}.log`), { flags: 'a' }));
    children.set(name, child);
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${output.get(name)}`);
        return (await fetch(`http://127.0.0.1:${portOf(component, instance)}/readyz`)).status === 200;
      },
      { timeoutMs: 90_000, intervalMs: 200, what: `${name} ready` },
    );
  };

  const running = (component: Component, instance: number) => {
    const name = processName(component, instance);
    const child = children.get(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} is not running`);
    return child;
  };

  const kill = async (component: Component, instance = 0) => {
    const child = running(component, instance);
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };

  const terminate = async (component: Component, instance = 0) => {
    const child = running(component, instance);
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    const sentAt = new Date();
    child.kill('SIGTERM');
    // The loader's own drain limit is SHUTDOWN_TIMEOUT_MS (30 s here): a process still there well
    // after it is stuck. Its report first, then SIGKILL.
    let killTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGUSR2');
      killTimer = setTimeout(() => child.kill('SIGKILL'), 5000);
    }, 60_000);
    const [code, signal] = await exited;
    clearTimeout(timer);
    clearTimeout(killTimer);
    const name = processName(component, instance);
    if (code !== 0) throw new Error(`${name} exited with ${code ?? signal} after SIGTERM (sent ${sentAt.toISOString()}): ${stuckReport(reportDir, child.pid)}\n${output.get(name)}`);
  };

  const count = async (table: string) => {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(config.databaseSchema)}.${quoteIdent(table)}`);
    return rows[0]?.n ?? 0;
  };

  const run: FaultRun = {
    config,
    sim,
    pool,
    kafka,
    start,
    kill,
    terminate,
    playScenario: () => sim.runScenario({ name: 'default', customers: 16, stepDelayMs: 100 }),
    async waitForRows(n) {
      await waitFor(async () => (await count('webhook_events')) >= n && (await count('resource_versions')) > 0, { timeoutMs: 60_000, intervalMs: 100, what: `${n} webhooks and a version in the warehouse` });
    },
    async eventsLater(extra) {
      const target = sim.stats().events + extra;
      await waitFor(() => sim.stats().events >= target, { timeoutMs: 60_000, intervalMs: 100, what: `${extra} more events` });
    },
    async finish() {
      // Recovery after a kill -9 legitimately takes up to a session timeout (30 s) plus the
      // fetcher's rebalance timeout (60 s) before the new owner even gets its partitions; on a
      // loaded 2-core CI machine a 60 s drain was too tight (a clean-clone run timed out).
      try {
        await drainPipeline({ kafka, config, pool, sim, timeoutMs: 150_000 });
      } catch (err) {
        // A stuck pipeline is explained by what its processes said, not by the wait that gave up,
        // and by which stage holds the records: per partition, its group's committed offset
        // against the last stable offset (a committed offset short of it: that consumer stopped
        // taking records; none short while records are missing: an open transaction hides them).
        const standing = await whereStagesStand(kafka, config).catch((e: unknown) => `stages: ${errorMessage(e)}`);
        const probes = await Promise.all(names.map(async (name) => {
          const url = `http://127.0.0.1:${ports.get(name) ?? 0}`;
          const said = async (path: string) => fetch(`${url}${path}`).then(async (r) => `${r.status} ${await r.text()}`, (e: unknown) => errorMessage(e));
          const counters = (await said('/metrics')).split('\n').filter((l) => !l.startsWith('#') && /(fetch_requests_total|consumer_group_lag|stage_stalled_seconds|delayed_forwarded_total|versions_total|webhooks_total|rows_written_total)/.test(l));
          return `probe ${name}: readyz ${await said('/readyz')}\n${counters.join('\n')}`;
        }));
        throw new Error(`${errorMessage(err)}\n${standing}\n${probes.join('\n')}\n${run.logs()}`, { cause: err });
      }
      const webhooks = await compareWebhooksToDeliveries(pool, config.databaseSchema, sim);
      const truth = await compareWarehouseToTruth(pool, config.databaseSchema, sim);
      if (truth.problems.length > 0) truth.problems.push(...(await whereVersionsAre(kafka, config, pool, truth.problems)));
      const stats = sim.stats().webhooks;
      const letters = await unexpectedDeadLetters({ kafka, registry: createRegistry(config.schemaRegistryUrl), config, pool, sim });
      const figures: FaultFigures = {
        fault: options.fault,
        acknowledged: webhooks.acknowledged,
        lost: webhooks.lost,
        duplicateVersions: truth.duplicateVersions,
        gaps: truth.gaps,
        extraWebhookRows: webhooks.extraRows,
        dropped: stats.dropped,
        deadLetters: letters.unexpected.length,
        notFoundGiveUps: letters.notFoundGiveUps,
        objects: truth.objects,
        versions: truth.versions,
        failedAttempts: stats.attempts - stats.delivered,
        durationMs: Date.now() - started,
      };
      // The matrix of the README: one JSON file per fault (git-ignored).
      const dir = join(packageRoot, 'test', 'faults', 'results');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${options.fault}.json`), `${JSON.stringify({ ...figures, at: new Date().toISOString() })}\n`);
      return { figures, truth, webhooks };
    },
    opsUrl: (component, instance = 0) => `http://127.0.0.1:${portOf(component, instance)}`,
    logs: () => names.map((n) => `--- ${n}\n${output.get(n)}`).join('\n'),
    async stop() {
      await sim.stop();
      await Promise.all(
        [...children.values()].map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = once(child, 'exit');
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(timer);
        }),
      );
      await pool.end();
      for (const dir of [...stateDirs, reportDir]) rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(COMPONENTS.flatMap((c) => Array.from({ length: counts[c] }, (_, i) => start(c, i))));
  } catch (err) {
    await run.stop();
    throw err;
  }
  return run;
}

/**
 * What must hold after every fault (docs/CONTRACT.md property 6): no acknowledged webhook missing from
 * `webhook_events`, versions gap-free with no duplicate consecutive content and true to the
 * simulator's history, and nothing in the DLQs.
 */
export function expectNothingLost(result: Awaited<ReturnType<FaultRun['finish']>>, logs: string): void {
  const { figures, truth, webhooks } = result;
  expect(webhooks.problems, logs).toEqual([]);
  expect(figures.lost).toBe(0);
  expect(figures.dropped).toBe(0);
  expect(truth.problems, logs).toEqual([]);
  expect(figures.duplicateVersions).toBe(0);
  expect(figures.gaps).toBe(0);
  expect(figures.deadLetters, logs).toBe(0);
  expect(figures.acknowledged).toBeGreaterThan(0);
  expect(figures.objects).toBeGreaterThan(0);
}

/** Per stage (group and topic it consumes), `partition:committed/last-stable-offset` of every partition. */
async function whereStagesStand(kafka: Kafka, config: Config): Promise<string> {
  const names = topicNames(config.topicPrefix);
  const internal = enricherTopics(config.topicPrefix);
  const stages: [string, string, string][] = [
    ['router', enricherGroupId(config.topicPrefix), names.webhooks],
    ['fetcher', fetcherGroupId(config.topicPrefix), internal.requests],
    ['delay forwarder', delayForwarderGroupId(config.topicPrefix), internal.delayed],
    ['sink', sinkGroupId(config), names.snapshots],
    ['sink', sinkGroupId(config), names.webhooks],
  ];
  const lines: string[] = [];
  for (const [stage, groupId, topic] of stages) {
    const parts = (await groupPositions(kafka, groupId, topic)).map((p) => `${p.partition}:${p.committed ?? '?'}/${p.end}${p.committed !== p.end ? ' BEHIND' : ''}`);
    lines.push(`stage ${stage} (${topic}): ${parts.join(' ')}`);
  }
  return lines.join('\n');
}

/**
 * For each resource a truth problem names, what the snapshots, heads and requests topics hold
 * for it (committed, and also uncommitted: a record only there was in an aborted or open
 * transaction) beside its versions in the warehouse: tells a version the enricher never
 * published, or published from a wrong head, from one the sink never wrote.
 */
async function whereVersionsAre(kafka: Kafka, config: Config, pool: pg.Pool, problems: string[]): Promise<string[]> {
  const keys = new Set(problems.flatMap((p) => [...p.matchAll(/(\w+):"([^"]+)"/g)].map((m) => `${m[1]}:${m[2]}`)));
  if (keys.size === 0) return [];
  const registry = createRegistry(config.schemaRegistryUrl);
  const internal = enricherTopics(config.topicPrefix);
  // Read committed and uncommitted: a version only in the second was in an aborted (or still
  // open) transaction.
  const collect = async (topic: string, readUncommitted: boolean) => {
    const found: { key: string; value: Buffer | null; partition: number; offset: string }[] = [];
    await readToEnd(kafka, topic, (partition, m) => {
      const key = m.key?.toString() ?? '';
      if (keys.has(key)) found.push({ key, value: m.value, partition, offset: m.offset });
    }, undefined, { readUncommitted });
    return found;
  };
  const describe = async (topic: string, readUncommitted: boolean, show: (value: Buffer) => Promise<string>) => {
    const byKey = new Map<string, string[]>();
    for (const v of await collect(topic, readUncommitted)) byKey.set(v.key, [...(byKey.get(v.key) ?? []), `${v.value ? await show(v.value) : 'null'}@${v.partition}:${v.offset}`]);
    return byKey;
  };
  const snapshot = async (value: Buffer) => `v${((await registry.decode(value)) as { version: number }).version}`;
  const head = async (value: Buffer) => `v${(JSON.parse(value.toString('utf8')) as { version: number }).version}`;
  const request = async (value: Buffer) => { try { return JSON.parse(value.toString('utf8')).event ?? 'request'; } catch { return 'request'; } };
  const views: [string, Map<string, string[]>][] = [
    ['snapshots committed', await describe(topicNames(config.topicPrefix).snapshots, false, snapshot)],
    ['snapshots uncommitted', await describe(topicNames(config.topicPrefix).snapshots, true, snapshot)],
    ['heads committed', await describe(internal.heads, false, head)],
    ['heads uncommitted', await describe(internal.heads, true, head)],
    ['requests uncommitted', await describe(internal.requests, true, request)],
  ];
  const lines: string[] = [];
  for (const key of keys) {
    const [type, id] = key.split(':') as [string, string];
    const { rows } = await pool.query<{ version: number; kafka_partition: number; kafka_offset: string }>(
      `SELECT version, kafka_partition, kafka_offset FROM ${quoteIdent(config.databaseSchema)}.resource_versions WHERE resource_type = $1 AND resource_id = $2 ORDER BY version`,
      [type, id],
    );
    const topics = views.map(([name, byKey]) => `${name} [${(byKey.get(key) ?? []).join(' ')}]`).join(', ');
    lines.push(`diagnosis ${key}: ${topics}, warehouse [${rows.map((r) => `v${r.version}@${r.kafka_partition}:${r.kafka_offset}`).join(' ')}]`);
  }
  return lines;
}

/**
 * What the diagnostic report of process `pid` (node --report-on-signal) says: node writes it from
 * a signal listener, so a report means the event loop still ran (the stop waits on something: the
 * libuv handles still active say what), no report that it was blocked.
 */
function stuckReport(dir: string, pid: number | undefined): string {
  const file = readdirSync(dir).find((f) => f.includes(`.${pid}.`) && f.endsWith('.json'));
  if (!file) return 'no diagnostic report after SIGUSR2: its event loop was blocked';
  const report = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { libuv?: { type: string; is_active?: boolean; remoteEndpoint?: { port?: number } }[] };
  const handles = (report.libuv ?? []).filter((h) => h.is_active).map((h) => `${h.type}${h.remoteEndpoint?.port ? `->${h.remoteEndpoint.port}` : ''}`);
  return `its event loop ran (diagnostic report written); active handles: ${handles.join(', ')}`;
}
