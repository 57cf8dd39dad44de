import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type pg from 'pg';
import type { Registry as MetricsRegistry } from 'prom-client';
import { createBillingApiClient } from '../billing-api/client.js';
import { RESOURCE_TYPES, RESOURCE_TYPE_INFO } from '../billing-api/resource-types.js';
import { withoutPassword, type Config } from '../config.js';
import { migrate } from '../db/migrate.js';
import { createPool, quoteIdent } from '../db/pool.js';
import { startPipeline } from '../pipeline.js';
import { startSimulator, type Simulator } from '../simulator/simulator.js';
import { readStackPorts } from '../stack/settings.js';
import { stackUp } from '../stack/stack.js';
import { cliConfig, cliEnvironment } from './cli-config.js';
import { composeComponents } from './components.js';
import { environmentHelp } from './env-help.js';

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

const say = (line: string) => console.log(line);

/**
 * `npm start`: everything a new user needs to see the loader work, on one machine. Brings the
 * local stack up (unless services are configured), migrates, runs the sandbox billing service
 * and the whole pipeline pointed at each other, plays the default scenario for `--duration`
 * seconds, waits until the warehouse has caught up, and prints what landed.
 */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the embedded default (npm start): local stack, sandbox billing service, the whole pipeline, a scenario, and a summary of the warehouse')
    .option('--duration <seconds>', 'wall time the scenario runs', positive, 60)
    .option('--seed <n>', 'scenario seed (default: a new one each run)', positive)
    .addHelpText('after', environmentHelp('demo'))
    .action(async (opts: { duration: number; seed?: number }) => {
      const env = await cliEnvironment();
      const config = await cliConfig('demo', env);
      const configured = Boolean(env.KAFKA_BROKERS || env.SCHEMA_REGISTRY_URL || env.DATABASE_URL);
      if (!configured) {
        const dir = config.stackDir;
        say('1/5 local stack: Kafka, schema registry, PostgreSQL (the first run downloads Kafka and the registry from Maven Central)');
        await stackUp({ dir, ports: readStackPorts(dir), progress: (l) => say(`    ${l}`) });
      } else {
        say('1/5 using the configured services (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DATABASE_URL)');
      }
      // Quiet logs unless asked: the demo's own lines are the interface here.
      const c = composeComponents(config, { service: 'demo', clientId: 'billing-loader-demo', logLevel: env.LOG_LEVEL ? config.logLevel : 'error' });
      const log = c.log;
      const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'billing-loader demo', log, max: 2 });
      const seed = opts.seed ?? Date.now() % 1_000_000;
      const sim = await startSimulator({
        seed,
        faults: { latencyMs: 20 },
        // Served, so a loader configured to read the escalation settings finds them.
        escalationSettings: true,
        // Upstream delivers late, twice and out of order (spec 6.1.7); so does the demo.
        delivery: { retryBaseDelayMs: 200, duplicateRate: 0.1, reorderRate: 0.1, lateRate: 0.05, lateDelayMs: 2000 },
      });
      try {
        const applied = await migrate(pool, { schema: config.databaseSchema, log });
        say(`2/5 warehouse schema '${config.databaseSchema}' migrated (${applied.applied.length} new migrations)`);
        const metrics = c.metrics;
        const api = createBillingApiClient({
          ...sim.clientOptions(),
          requestsPerSecond: 40, // below the sandbox's 50/s limit: the loader never causes a 429
          maxConcurrency: 8,
          logger: log,
          registry: metrics,
        });
        c.onStop(() => api.close());
        const demoConfig: Config = { ...config, ingressPort: 0 } as Config;
        const pipeline = await startPipeline({ ...c, reader: api }, demoConfig, { host: '127.0.0.1' });
        c.onStop(() => pipeline.stop());
        sim.setWebhookUrl(`${pipeline.ingress.url}/webhooks`);
        say(`3/5 sandbox billing service at ${sim.baseUrl} (seed ${seed}) sends webhooks to the ingress at ${pipeline.ingress.url}/webhooks`);
        try {
          const before = await versionCount(pool, config.databaseSchema);
          await playScenario(sim, pool, config.databaseSchema, opts.duration, before);
          say('5/5 waiting for the pipeline to drain');
          await drain(sim, pool, config.databaseSchema);
          await printSummary(sim, pool, config, metrics, before);
        } finally {
          await c.stop();
        }
      } finally {
        await sim.stop();
        await pool.end();
      }
    });
}

/** Simulated days the demo's history spans, ending now; customers sign up during its first SPREAD_DAYS. */
const HISTORY_DAYS = 180;
const SPREAD_DAYS = 120;

/**
 * The customers of a demo of `seconds`: about 0.4 per second, so that their events (a few per
 * second) stay within the loader's request budget and each change is read as its own version.
 */
export function demoCustomers(seconds: number): number {
  return Math.max(6, Math.round(seconds * 0.4));
}

async function playScenario(sim: Simulator, pool: pg.Pool, schema: string, seconds: number, before: number): Promise<void> {
  const customers = demoCustomers(seconds);
  say(`4/5 playing the last ${HISTORY_DAYS} days of ${customers} customers in ${seconds} s, up to now: signups, trials, plan changes, cancellations, invoices every month, payment failures, escalations, dunning, customer locks and deletions, catalog price changes`);
  const stop = new AbortController();
  const started = Date.now();
  // The story clock: the history ends at the wall clock's now when the run ends, and its events
  // are paced over the run, so the loader reads each contract's states one by one.
  const run = sim.runScenario({ name: 'default', customers, historyDays: HISTORY_DAYS, spreadDays: SPREAD_DAYS, endAt: new Date(started + seconds * 1000), durationMs: seconds * 1000, signal: stop.signal });
  const timer = setTimeout(() => stop.abort(), seconds * 1000 + 10_000);
  let done = false;
  void run.finally(() => (done = true));
  while (!done) {
    await Promise.race([sleep(5000), run]);
    const s = sim.stats();
    const versions = (await versionCount(pool, schema)) - before;
    say(`    ${String(Math.round((Date.now() - started) / 1000)).padStart(3)} s  events ${s.events}  webhooks delivered ${s.webhooks.delivered}  API requests ${s.requests.total}  versions written ${versions}`);
  }
  clearTimeout(timer);
  await run;
}

async function versionCount(pool: pg.Pool, schema: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoteIdent(schema)}.resource_versions`);
  return Number(rows[0]?.n ?? 0);
}

/** Until every webhook is delivered and the warehouse has stopped growing for three seconds. */
async function drain(sim: Simulator, pool: pg.Pool, schema: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  let last = -1;
  let stableSince = Date.now();
  while (Date.now() < deadline) {
    const n = await versionCount(pool, schema);
    if (n !== last || sim.stats().webhooks.pending > 0) {
      last = n;
      stableSince = Date.now();
    } else if (Date.now() - stableSince >= 3000) {
      return;
    }
    await sleep(500);
  }
  say('    (still moving after 2 minutes; the summary shows what has landed so far)');
}

/** What the warehouse's history shows of this run's contracts: versions, cancellations and plan changes (from `contract_changes`). */
async function contractStory(pool: pg.Pool, schema: string, ids: string[]): Promise<{ loaded: number; several: number; versions: number; cancellations: number; planChanges: number }> {
  const { rows: [v] } = await pool.query<{ loaded: number; several: number; versions: number }>(
    `SELECT count(*)::int AS loaded, count(*) FILTER (WHERE n > 1)::int AS several, coalesce(sum(n), 0)::int AS versions
       FROM (SELECT resource_id, count(*) AS n FROM ${schema}.contract_history WHERE resource_id = ANY($1) GROUP BY resource_id) per_contract`,
    [ids],
  );
  const { rows: [c] } = await pool.query<{ cancellations: number; plan_changes: number }>(
    `SELECT count(*) FILTER (WHERE field = 'enddate' AND jsonb_typeof(new_value) = 'string' AND jsonb_typeof(old_value) IS DISTINCT FROM 'string')::int AS cancellations,
            count(*) FILTER (WHERE field = 'planid' AND jsonb_typeof(old_value) = 'string' AND jsonb_typeof(new_value) = 'string')::int AS plan_changes
       FROM ${schema}.contract_changes WHERE resource_id = ANY($1) AND field IN ('enddate', 'planid')`,
    [ids],
  );
  return { loaded: v?.loaded ?? 0, several: v?.several ?? 0, versions: v?.versions ?? 0, cancellations: c?.cancellations ?? 0, planChanges: c?.plan_changes ?? 0 };
}

async function counterTotal(metrics: MetricsRegistry, name: string): Promise<number> {
  const metric = (await metrics.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values ?? []).reduce((sum, v) => sum + Number(v.value), 0);
}

async function printSummary(sim: Simulator, pool: pg.Pool, config: Config, metrics: MetricsRegistry, before: number): Promise<void> {
  const schema = quoteIdent(config.databaseSchema);
  const stats = sim.stats();
  const fetches = Object.entries(stats.requests.byRoute)
    .filter(([route]) => /^GET \/api\/v1\/\w+\/:id$/.test(route))
    .reduce((sum, [, outcomes]) => sum + Object.values(outcomes).reduce((a, b) => a + b, 0), 0);
  const delivered = stats.webhooks.delivered;
  const dlq = (await counterTotal(metrics, 'billing_loader_enricher_dead_letters_total')) + (await counterTotal(metrics, 'billing_loader_sink_dead_letters_total'));
  say('\nSummary of this run');
  say(`  webhooks delivered and acknowledged   ${delivered}  (${stats.events} events; duplicates and late deliveries included)`);
  say(`  resource fetches made                 ${fetches}  (${delivered > 0 ? (fetches / delivered).toFixed(2) : '0'} per webhook; ${stats.tokenRequests} token request(s))`);
  say(`  versions written                      ${(await versionCount(pool, config.databaseSchema)) - before}`);
  say(`  records sent to a DLQ                 ${dlq}`);
  say('\n  versions in the warehouse, by resource type (all runs)');
  for (const type of RESOURCE_TYPES) {
    const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.${quoteIdent(`${RESOURCE_TYPE_INFO[type].table}_history`)}`);
    say(`    ${type.padEnd(26)} ${rows[0]?.n}`);
  }
  const ids = sim.ids('Contract');
  const story = await contractStory(pool, schema, ids);
  say(`\n  contracts of this run                 ${ids.length}  (${story.loaded} in the warehouse)`);
  say(`    with several versions               ${story.several}  (${story.versions} versions, ${story.loaded > 0 ? (story.versions / story.loaded).toFixed(1) : '0'} per contract)`);
  say(`    cancellations in their history      ${story.cancellations}  (EndDate set; contract_changes field 'enddate')`);
  say(`    plan changes in their history       ${story.planChanges}  (contract_changes field 'planid')`);
  const { rows: [busiest] } = await pool.query<{ resource_id: string }>(
    `SELECT resource_id FROM ${schema}.contract_history WHERE resource_id = ANY($1) GROUP BY resource_id ORDER BY count(*) DESC, resource_id LIMIT 1`,
    [ids],
  );
  if (busiest) {
    const { rows } = await pool.query<{ version: number; valid_from: Date; status: string | null; plan: string | null; deleted: boolean }>(
      `SELECT version, valid_from, body->>'LifecycleStatus' AS status, body->>'PlanId' AS plan, deleted FROM ${schema}.contract_history WHERE resource_id = $1 ORDER BY version`,
      [busiest.resource_id],
    );
    say(`\n  history of contract ${busiest.resource_id}`);
    say('    version  valid_from                 status     plan');
    for (const r of rows) say(`    ${String(r.version).padStart(7)}  ${r.valid_from.toISOString().padEnd(25)}  ${(r.deleted ? 'deleted' : (r.status ?? '')).padEnd(9)}  ${r.plan ?? ''}`);
  }
  say(`\nExplore further:  psql ${withoutPassword(config.databaseUrl)}  -c 'SELECT * FROM ${config.databaseSchema}.contract_current LIMIT 5'`);
  // The demo ends here rather than serving the page itself: `npm start` is a run with a summary,
  // and the dashboard reads the warehouse whether or not the pipeline runs.
  say(`The charts of this warehouse and each contract's timeline:  npx billing-loader dashboard  then open http://localhost:${config.dashboardPort}/`);
  say('The local stack keeps running; stop it with:  npx billing-loader stack down');
}
