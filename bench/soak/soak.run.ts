// The soak (not a test): `npm run soak [-- --minutes N]`, see bench/soak/run.mjs. Steady webhooks
// from the sandbox through ingress, enricher and sink, each a separate process, against a
// PRIVATE broker, database and schema registry started here (never the shared stack), with a
// fault struck every minute. Afterwards the warehouse is compared with the sandbox's truth.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, writeFileSync, type WriteStream } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { errorMessage } from '../../src/errors.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';
import { createRegistry } from '../../src/registry/registry.js';
import { createRandom } from '../../src/simulator/seeded-random.js';
import { startSimulator } from '../../src/simulator/simulator.js';
import { startPrivateKafka, startPrivatePostgres, type PrivateService } from '../../test/faults/private-services.js';
import { freePort } from '../../test/helpers/free-port.js';
import { drainPipeline, unexpectedDeadLetters } from '../../test/helpers/pipeline-drain.js';
import { compareWarehouseToTruth, compareWebhooksToDeliveries } from '../../test/helpers/warehouse-truth.js';
import { startPrivateRegistry } from './private-registry.js';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const SEED = Number(process.env.SOAK_SEED ?? 1);
const FAULT_EVERY_MS = 60_000;
/** How long an API 5xx burst or a 429 storm lasts. */
const API_FAULT_MS = 20_000;
/** The watchdog's settings for the soak (`--watchdog-*` flags): shorter than the defaults, so that it can act within the run. */
const WATCHDOG = { WATCHDOG_STALL_MS: process.env.SOAK_WATCHDOG_STALL_MS ?? '90000', WATCHDOG_LIVENESS_MS: process.env.SOAK_WATCHDOG_LIVENESS_MS ?? '60000', LAG_CHECK_INTERVAL_MS: '5000' };
const FAULTS = ['broker-restart', 'postgres-restart', 'registry-restart', 'sigkill', 'api-5xx-burst', 'api-429-storm'] as const;
type FaultKind = (typeof FAULTS)[number];
/** The faults drawn from (`--faults`, comma-separated; default all). */
const DRAWN: FaultKind[] = (process.env.SOAK_FAULTS ?? FAULTS.join(',')).split(',').map((f) => {
  if (!(FAULTS as readonly string[]).includes(f)) throw new Error(`--faults: unknown fault '${f}'; use ${FAULTS.join(', ')}`);
  return f as FaultKind;
});
type Component = 'ingress' | 'enricher' | 'sink';
const COMPONENTS: Component[] = ['sink', 'enricher', 'ingress'];

interface Struck {
  at: string;
  fault: FaultKind;
  target?: string;
  /** Until the service answered again, or the API fault was lifted. */
  seconds: number;
  error?: string;
}

const say = (line: string) => process.stdout.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

async function soak(): Promise<string> {
  const started = Date.now();
  const logDir = join(packageRoot, '.cache', 'soak', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(logDir, { recursive: true });
  say(`starting private Kafka, PostgreSQL and schema registry; logs in ${logDir}`);
  const [kafkaService, postgres, registryService] = await Promise.all([startPrivateKafka(), startPrivatePostgres(), startPrivateRegistry()]);
  const services: PrivateService[] = [kafkaService, postgres];
  const config = loadConfig({ KAFKA_BROKERS: kafkaService.address, SCHEMA_REGISTRY_URL: registryService.address, DATABASE_URL: postgres.address, TOPIC_PREFIX: 'soak', DATABASE_SCHEMA: 'soak', LOG_LEVEL: 'info' });
  const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'soak', log: silentLogger, max: 3 });
  // A PostgreSQL restart breaks the pool's idle connections; the pool replaces them.
  pool.on('error', () => undefined);
  await migrate(pool, { schema: config.databaseSchema, log: silentLogger });
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'soak', log: silentLogger });
  const random = createRandom(SEED);
  const ports = new Map<Component, number>();
  for (const c of COMPONENTS) ports.set(c, await freePort());
  const sim = await startSimulator({
    seed: SEED,
    rateLimit: { requestsPerSecond: 0 },
    webhookUrl: `http://127.0.0.1:${ports.get('ingress') ?? 0}/webhooks`,
    // 12 attempts from 250 ms doubling: the last one about 17 minutes after the first, past any outage here.
    delivery: { retryBaseDelayMs: 250, attemptTimeoutMs: 10_000, duplicateRate: 0.05, lateRate: 0.02, lateDelayMs: 1000, reorderRate: 0.05 },
  });

  // The supervisor: restarts a process that exits (systemd's Restart=always) and kills one whose
  // /livez answers 503 (a Kubernetes liveness probe).
  const children = new Map<Component, ChildProcess>();
  const logs = new Map<Component, WriteStream>(COMPONENTS.map((c) => [c, createWriteStream(join(logDir, `${c}.log`), { flags: 'a' })]));
  const counts = { processRestarts: 0, livenessKills: 0, watchdogRestarts: 0, watchdogLivenessFailures: 0 };
  let stopping = false;
  const env = (): NodeJS.ProcessEnv => ({
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
    BILLING_API_REQUESTS_PER_SECOND: '100',
    INGRESS_PORT: String(ports.get('ingress')),
    ENRICHER_PORT: String(ports.get('enricher')),
    SINK_PORT: String(ports.get('sink')),
    ENRICHER_STATE_DIR: join(logDir, 'enricher-state'),
    // Rereads of 404s on the scale of the run: the drain waits for every one of them.
    ENRICHER_NOT_FOUND_WINDOW_MS: '10000',
    ENRICHER_GONE_CONFIRM_MS: '2000',
    ...WATCHDOG,
  });
  const opsUrl = (c: Component) => `http://127.0.0.1:${ports.get(c) ?? 0}`;
  const launch = (c: Component) => {
    const child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), c], { cwd: packageRoot, env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d: Buffer) => {
      const text = d.toString();
      logs.get(c)?.write(text);
      counts.watchdogRestarts += text.split('"msg":"stage stalled, restarting its consumers and producers"').length - 1;
      counts.watchdogLivenessFailures += text.split('"msg":"stage still stalled after its restart, failing liveness"').length - 1;
    });
    child.once('exit', (code, signal) => {
      logs.get(c)?.write(`\n--- soak: ${c} exited (${code ?? signal})\n`);
      if (stopping || children.get(c) !== child) return;
      counts.processRestarts++;
      setTimeout(() => {
        if (!stopping && children.get(c) === child) launch(c);
      }, 1000);
    });
    children.set(c, child);
  };
  const ready = async (c: Component, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const ok = await fetch(`${opsUrl(c)}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false);
      if (ok) return;
      await sleep(500);
    }
    throw new Error(`${c} not ready within ${timeoutMs} ms`);
  };
  for (const c of COMPONENTS) {
    launch(c);
    await ready(c, 180_000);
  }
  say('ingress, enricher and sink ready; the scenario starts');

  const scenarioStop = new AbortController();
  const scenario = (async () => {
    while (!scenarioStop.signal.aborted) {
      await sim.runScenario({ name: 'default', customers: 24, stepDelayMs: 150, loop: true, signal: scenarioStop.signal }).catch((err: unknown) => say(`scenario failed: ${errorMessage(err)}`));
    }
  })();

  // Observation every 2 s: liveness, the stall gauges, and whether the warehouse grows.
  const longestStall: Record<string, number> = {};
  let lastRows = -1;
  let lastGrowth = Date.now();
  let longestStandstillMs = 0;
  let observing = true;
  const observer = (async () => {
    while (observing) {
      await sleep(2000);
      for (const c of COMPONENTS) {
        const child = children.get(c);
        if (!child || child.exitCode !== null || child.signalCode !== null) continue;
        const live = await fetch(`${opsUrl(c)}/livez`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0);
        if (live === 503 && !stopping) {
          say(`${c}: /livez 503, killing it for the supervisor to restart it`);
          counts.livenessKills++;
          child.kill('SIGKILL');
          continue;
        }
        const metrics = await fetch(`${opsUrl(c)}/metrics`, { signal: AbortSignal.timeout(2000) }).then((r) => r.text(), () => '');
        for (const m of metrics.matchAll(/^billing_loader_stage_stalled_seconds\{stage="([^"]+)"\} ([\d.e+]+)$/gm)) {
          const stage = m[1] as string;
          longestStall[stage] = Math.max(longestStall[stage] ?? 0, Number(m[2]));
        }
      }
      const rows = await pool.query<{ n: number }>(`SELECT (SELECT count(*) FROM ${quoteIdent(config.databaseSchema)}.webhook_events) + (SELECT count(*) FROM ${quoteIdent(config.databaseSchema)}.resource_versions) AS n`).then((r) => Number(r.rows[0]?.n), () => lastRows);
      if (rows > lastRows) {
        lastRows = rows;
        lastGrowth = Date.now();
      } else if (!scenarioStop.signal.aborted) {
        longestStandstillMs = Math.max(longestStandstillMs, Date.now() - lastGrowth);
      }
    }
  })();

  const struck: Struck[] = [];
  const restartService = async (service: PrivateService['service'], waitMs: number) => {
    await service.stop();
    await service.start();
    await service.waitReady(waitMs);
  };
  const strike = async (fault: FaultKind): Promise<Struck> => {
    const t0 = Date.now();
    const entry: Struck = { at: new Date().toISOString().slice(11, 19), fault, seconds: 0 };
    try {
      switch (fault) {
        case 'broker-restart':
          await restartService(kafkaService.service, 120_000);
          break;
        case 'postgres-restart':
          await restartService(postgres.service, 120_000);
          break;
        case 'registry-restart':
          await restartService(registryService.service, 180_000);
          break;
        case 'sigkill': {
          const target = COMPONENTS[Math.floor(random.next() * COMPONENTS.length)] as Component;
          entry.target = target;
          children.get(target)?.kill('SIGKILL');
          break;
        }
        case 'api-5xx-burst':
          sim.setFaults({ errorRate: 0.5 });
          await sleep(API_FAULT_MS);
          sim.setFaults({ errorRate: 0 });
          break;
        case 'api-429-storm':
          sim.setRateLimit({ requestsPerSecond: 2, burst: 2 });
          await sleep(API_FAULT_MS);
          sim.setRateLimit({ requestsPerSecond: 0 });
          break;
      }
    } catch (err) {
      entry.error = errorMessage(err);
    }
    entry.seconds = Math.round((Date.now() - t0) / 1000);
    return entry;
  };

  const end = Date.now() + MINUTES * 60_000;
  let nextFault = Date.now() + FAULT_EVERY_MS;
  while (Date.now() + 1000 < end) {
    await sleep(Math.max(0, Math.min(nextFault, end) - Date.now()));
    if (Date.now() >= end) break;
    const fault = DRAWN[Math.floor(random.next() * DRAWN.length)] as FaultKind;
    say(`fault ${struck.length + 1}: ${fault}`);
    const entry = await strike(fault);
    struck.push(entry);
    say(`fault ${struck.length}: ${fault}${entry.target ? ` (${entry.target})` : ''} done after ${entry.seconds} s${entry.error ? `, error: ${entry.error}` : ''}`);
    nextFault += FAULT_EVERY_MS;
    while (nextFault <= Date.now()) nextFault += FAULT_EVERY_MS;
  }

  say('time is up: the scenario stops; draining');
  scenarioStop.abort();
  await scenario;
  const drainStarted = Date.now();
  let drained = 'yes';
  try {
    for (const c of COMPONENTS) await ready(c, 300_000);
    await drainPipeline({ kafka, config, pool, sim, timeoutMs: 900_000 });
  } catch (err) {
    drained = `no: ${errorMessage(err)}`;
  }
  const drainSeconds = Math.round((Date.now() - drainStarted) / 1000);
  observing = false;
  await observer;
  say(`drained: ${drained} (${drainSeconds} s); comparing with the truth`);
  const webhooks = await compareWebhooksToDeliveries(pool, config.databaseSchema, sim);
  const truth = await compareWarehouseToTruth(pool, config.databaseSchema, sim);
  const letters = await unexpectedDeadLetters({ kafka, registry: createRegistry(config.schemaRegistryUrl), config, pool, sim }).catch((err: unknown) => ({ notFoundGiveUps: -1, unexpected: [`not read: ${errorMessage(err)}`] }));
  const stats = sim.stats().webhooks;

  stopping = true;
  await sim.stop();
  await Promise.all(
    [...children.values()].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
      await exited;
      clearTimeout(timer);
    }),
  );
  for (const stream of logs.values()) stream.end();
  await pool.end();
  for (const s of [...services, registryService]) await s.dispose().catch(() => undefined);

  // A lost version: a gap in 1..n, a latest version that is not the current state, an object a webhook named with no version.
  const statesMissed = truth.problems.filter((p) => /is not the current state|was deleted, but|has no version|is not a true state/.test(p)).length;
  const byKind = FAULTS.map((f) => `${f} ${struck.filter((s) => s.fault === f).length}`).join(', ');
  const sigkills = struck.filter((s) => s.fault === 'sigkill').map((s) => s.target).join(', ');
  const stall = Object.entries(longestStall).sort().map(([stage, s]) => `${stage} ${Math.round(s)} s`).join(', ');
  const lines = [
    `| date | ${new Date(started).toISOString().slice(0, 16).replace('T', ' ')} UTC |`,
    `| machine | ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), shared with other work at the time |`,
    `| duration | ${MINUTES} min of faults and load, then the drain (${drainSeconds} s); seed ${SEED}; WATCHDOG_STALL_MS ${WATCHDOG.WATCHDOG_STALL_MS}, WATCHDOG_LIVENESS_MS ${WATCHDOG.WATCHDOG_LIVENESS_MS} |`,
    `| faults struck | ${struck.length}: ${byKind}${sigkills ? ` (SIGKILL of ${sigkills})` : ''}; failed to strike: ${struck.filter((s) => s.error).length} |`,
    `| webhooks | ${stats.delivered} deliveries, ${webhooks.acknowledged} acknowledged, ${stats.attempts - stats.delivered} attempts refused or timed out and retried, ${stats.dropped} given up by the sender |`,
    `| webhooks lost (acknowledged, not in the warehouse) | ${webhooks.lost} |`,
    `| versions | ${truth.objects} objects, ${truth.versions} versions |`,
    `| versions lost | ${truth.gaps} gaps, ${statesMissed} states missed |`,
    `| versions duplicated | ${truth.duplicateVersions} |`,
    `| other truth problems | ${truth.problems.length - statesMissed - truth.duplicateVersions} |`,
    `| unexpected dead letters | ${letters.unexpected.length} (besides ${letters.notFoundGiveUps} give-ups: resources deleted before any read could see them) |`,
    `| drained | ${drained} |`,
    `| longest stall (stage gauge max) | ${stall || 'none seen'} |`,
    `| longest standstill of the warehouse during the load | ${Math.round(longestStandstillMs / 1000)} s |`,
    `| watchdog | ${counts.watchdogRestarts} stage restarts, ${counts.watchdogLivenessFailures} liveness failures; supervisor: ${counts.livenessKills} liveness kills, ${counts.processRestarts} process restarts |`,
  ];
  const report = ['| soak | |', '|---|---|', ...lines].join('\n');
  const details = { struck, longestStall, counts, webhookProblems: webhooks.problems.slice(0, 50), truthProblems: truth.problems.slice(0, 50), deadLetters: letters.unexpected.slice(0, 50) };
  writeFileSync(join(logDir, 'report.md'), `${report}\n\n\`\`\`json\n${JSON.stringify(details, null, 2)}\n\`\`\`\n`);
  return `${report}\n\nfaults: ${struck.map((s) => `${s.at} ${s.fault}${s.target ? `(${s.target})` : ''} ${s.seconds}s${s.error ? ` ERROR ${s.error}` : ''}`).join('; ')}\nreport and logs: ${logDir}`;
}

describe('soak', () => {
  it(`${MINUTES} minutes of webhooks with a fault every minute`, async () => {
    const report = await soak();
    process.stdout.write(`\n${report}\n`);
  });
});
