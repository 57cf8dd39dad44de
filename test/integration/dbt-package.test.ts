import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';
import { ANALYST_ROLE } from '../../src/warehouse/resource-types.js';
import { dbtProfile, dbtProjectDir, ensureDbt, mfQuery, pythonAvailable, runDbt, writeHostProject, type DbtDirs, type RunResults } from '../helpers/dbt.js';
import { lifecycles, monthlyChurn, trialCohorts } from '../helpers/metric-truth.js';
import { scenarioWarehouse, type ScenarioWarehouse } from '../helpers/scenario-warehouse.js';
import { loadScenarioTruth } from '../helpers/warehouse-truth.js';

interface Manifest {
  nodes: Record<string, { resource_type: string; package_name: string }>;
  exposures: Record<string, { depends_on: { nodes: string[] } }>;
  semantic_models: Record<string, unknown>;
  metrics: Record<string, unknown>;
  unit_tests: Record<string, unknown>;
}

interface FreshnessResults {
  results: Array<{ unique_id: string; status: string }>;
}

const python = pythonAvailable();
const analystsDoc = () => readFileSync(join(packageRoot, 'docs', 'ANALYSTS.md'), 'utf8');

/** A fenced block of docs/ANALYSTS.md by its tag (```sql example=<name> ... or ```yaml <tag>). */
function docBlock(open: string): string {
  const doc = analystsDoc();
  const at = doc.indexOf(`\`\`\`${open}\n`);
  if (at < 0) throw new Error(`docs/ANALYSTS.md has no block ${open}`);
  const start = at + open.length + 4;
  return doc.slice(start, doc.indexOf('\n```', start));
}

/**
 * The analysts' dbt package built with the pinned dbt and MetricFlow against the scenario
 * warehouse, installed the way a dbt team adopts it (a host project's packages.yml, the vars set
 * under the package's name), as a login that holds only billing_loader_analyst and owns a schema
 * of its own for the models: the package must need nothing more than the analyst role, and must
 * never write into the warehouse schema.
 */
describe.skipIf(!python)(`the dbt package analytics/dbt${python ? '' : ' (skipped: no python3 on this machine to install dbt with)'}`, () => {
  const suffix = randomBytes(4).toString('hex');
  const login = `dbt_${suffix}`;
  const crafted = `dbt_${suffix}_crafted`;
  const badChurn = `dbt_${suffix}_bad_churn`;
  const stale = `dbt_${suffix}_stale`;
  const scratch = `dbt_${suffix}_scratch`;
  let wh: ScenarioWarehouse;
  let dbt: string;
  let mf: string;
  let owner: pg.Client;
  let tmp: string;
  let host: string;
  let builtAt: Date;

  const dirs = (name: string): DbtDirs => ({ profilesDir: tmp, targetPath: join(tmp, name, 'target'), logPath: join(tmp, name, 'logs') });
  const vars = (v: Record<string, string | number>) => ['--vars', JSON.stringify(v)];
  const hostDirs = (): DbtDirs => ({ profilesDir: tmp, targetPath: join(host, 'target'), logPath: join(host, 'logs') });
  const ownerRows = async <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> => (await owner.query<T>(sql, params)).rows;

  /** A schema of crafted relations the login may read: each a copy of the scenario's view as a table. */
  async function copySchema(schema: string, relations: string[]): Promise<void> {
    await owner.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    for (const r of relations) await owner.query(`CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(r)} AS SELECT * FROM ${quoteIdent(wh.schema)}.${quoteIdent(r)}`);
    await owner.query(`GRANT USAGE ON SCHEMA ${quoteIdent(schema)} TO ${quoteIdent(login)}`);
    await owner.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${quoteIdent(schema)} TO ${quoteIdent(login)}`);
  }

  beforeAll(async () => {
    // The first run of a clean clone installs dbt (pip: half a minute, two on a loaded machine)
    // while the scenario fills.
    const [warehouse, install] = await Promise.all([scenarioWarehouse(), ensureDbt()]);
    wh = warehouse;
    dbt = install.dbt;
    mf = install.mf;
    owner = new pg.Client({ connectionString: wh.databaseUrl, application_name: 'dbt-package-test' });
    await owner.connect();
    await owner.query(`CREATE ROLE ${quoteIdent(login)} LOGIN IN ROLE ${quoteIdent(ANALYST_ROLE)}`);
    await owner.query(`CREATE SCHEMA ${quoteIdent(login)} AUTHORIZATION ${quoteIdent(login)}`);
    await owner.query(`CREATE SCHEMA ${quoteIdent(scratch)} AUTHORIZATION ${quoteIdent(login)}`);
    tmp = await mkdtemp(join(tmpdir(), 'dbt-package-'));
    const url = new URL(wh.databaseUrl);
    url.username = login;
    url.password = '';
    await writeFile(join(tmp, 'profiles.yml'), dbtProfile(url.toString(), login));
    await mkdir(join(tmp, 'scratch'));
    await writeFile(join(tmp, 'scratch', 'profiles.yml'), dbtProfile(url.toString(), scratch));
    host = join(tmp, 'host');
    await writeHostProject(host, `  - local: ${JSON.stringify(dbtProjectDir)}`, { billing_loader_schema: wh.schema });
  }, 600_000);

  afterAll(async () => {
    if (owner) {
      for (const s of [login, scratch, crafted, badChurn, stale]) await owner.query(`DROP SCHEMA IF EXISTS ${quoteIdent(s)} CASCADE`);
      await owner.query(`DROP ROLE IF EXISTS ${quoteIdent(login)}`);
      await owner.end();
    }
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('installs into a host project from packages.yml and builds every model and test there', async () => {
    const deps = await runDbt(dbt, ['deps'], hostDirs(), host);
    expect(deps.code, deps.output).toBe(0);
    const { code, output, results } = await runDbt(dbt, ['build'], hostDirs(), host);
    builtAt = new Date();
    expect(code, output).toBe(0);
    const manifest = JSON.parse(await readFile(join(host, 'target', 'manifest.json'), 'utf8')) as Manifest;
    const expected = Object.entries(manifest.nodes)
      .filter(([, n]) => (n.resource_type === 'model' || n.resource_type === 'test') && n.package_name === 'billing_loader')
      .map(([id]) => id)
      .concat(Object.keys(manifest.unit_tests).filter((id) => id.startsWith('unit_test.billing_loader.')))
      .sort();
    const ran = (results as RunResults).results.filter((r) => /^(model|test|unit_test)\./.test(r.unique_id));
    // Every model, data test and unit test of the package ran (none left out or skipped), and none failed or warned.
    expect(ran.map((r) => r.unique_id).sort()).toEqual(expected);
    expect(ran.filter((r) => r.status !== 'success' && r.status !== 'pass').map((r) => `${r.unique_id}: ${r.status} ${r.message ?? ''}`)).toEqual([]);
    const models = expected.filter((id) => id.startsWith('model.'));
    const tests = expected.filter((id) => id.startsWith('test.'));
    expect(expected.filter((id) => id.startsWith('unit_test.')).length).toBeGreaterThanOrEqual(2);
    // Namespaced: every model carries the package's prefix, in its layer.
    expect(models.map((id) => id.replace('model.billing_loader.', '')).filter((m) => !/^(stg_billing_loader__|int_billing_loader__|billing_loader__)/.test(m))).toEqual([]);
    expect(models.filter((id) => id.includes('.stg_billing_loader__')).length).toBeGreaterThanOrEqual(13);
    expect(models.filter((id) => id.includes('.int_billing_loader__')).length).toBeGreaterThanOrEqual(4);
    expect(tests.length).toBeGreaterThanOrEqual(200);
    for (const t of ['contract', 'customer', 'order', 'invoice', 'invoice_draft', 'dunning', 'payment_transaction', 'payment_escalation_process']) {
      expect(tests.some((id) => id.startsWith(`test.billing_loader.source_unique_combination_billing_${t}_history_resource_id__version`)), t).toBe(true);
    }
    // Relationships and range tests are among them.
    expect(tests.filter((id) => id.includes('.relationships_')).length).toBeGreaterThanOrEqual(4);
    expect(tests.some((id) => id.startsWith('test.billing_loader.billing_loader_in_range_billing_loader__monthly_churn_churn_rate'))).toBe(true);
    // The dashboard is an exposure on the views it reads; the semantic layer is there.
    expect(Object.keys(manifest.exposures)).toContain('exposure.billing_loader.billing_loader_dashboard');
    expect(manifest.exposures['exposure.billing_loader.billing_loader_dashboard']!.depends_on.nodes).toContain('source.billing_loader.billing_metrics.contract_daily');
    expect(Object.keys(manifest.semantic_models).length).toBeGreaterThanOrEqual(4);
    expect(Object.keys(manifest.metrics)).toEqual(expect.arrayContaining(['metric.billing_loader.billing_loader_churn_rate', 'metric.billing_loader.billing_loader_trial_conversion_rate', 'metric.billing_loader.billing_loader_mrr_net', 'metric.billing_loader.billing_loader_new_paying_contracts']));

    // The models landed in the login's own schema; the staging model holds every version.
    const staged = await ownerRows<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(login)}.stg_billing_loader__contract_versions`);
    const history = await ownerRows<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(wh.schema)}.contract_history`);
    expect(staged[0]!.n).toBe(history[0]!.n);
    expect(staged[0]!.n).toBeGreaterThan(0);
    const mrr = await ownerRows<{ months: number; mrr: string }>(`SELECT count(DISTINCT month)::int AS months, sum(mrr_net) AS mrr FROM ${quoteIdent(login)}.billing_loader__mrr_monthly`);
    expect(mrr[0]!.months).toBeGreaterThan(0);
    expect(Number(mrr[0]!.mrr)).toBeGreaterThan(0);
  }, 600_000);

  it('gives the marts the numbers of the warehouse views they mirror, and of the sandbox truth', async () => {
    const m = quoteIdent(login);
    // Churn: question 1 of docs/ANALYSTS.md, run as written on the views.
    const q1 = docBlock('sql example=churn-rate-by-month expect=rows').replace(/;\s*$/, '');
    await owner.query('BEGIN READ ONLY');
    const viewChurn = await (async () => {
      try {
        await owner.query(`SET LOCAL search_path TO ${quoteIdent(wh.schema)}`);
        return await ownerRows(`SELECT month::text, paying_at_start::int, churned::int, churn_rate::text FROM (${q1}) q ORDER BY month`);
      } finally {
        await owner.query('ROLLBACK');
      }
    })();
    const martChurn = await ownerRows(`SELECT month::text, paying_at_start::int, churned::int, churn_rate::text FROM ${m}.billing_loader__monthly_churn ORDER BY month`);
    expect(martChurn.length).toBeGreaterThan(0);
    expect(martChurn).toEqual(viewChurn);
    expect(martChurn.some((r) => Number(r.churned) > 0)).toBe(true);
    const truth = await loadScenarioTruth(owner, wh.schema);
    const truthChurn = monthlyChurn(lifecycles(truth, builtAt), builtAt).map((r) => ({ ...r, churn_rate: r.paying_at_start === 0 ? null : (r.churned / r.paying_at_start).toFixed(4) }));
    expect(martChurn).toEqual(truthChurn);

    // Movements: subscription_movements summed per month and kind.
    const viewMovements = await ownerRows<{ month: string; movement: string; contracts: number }>(
      `SELECT date_trunc('month', day)::date::text AS month, movement, sum(contracts)::int AS contracts FROM ${quoteIdent(wh.schema)}.subscription_movements GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    const kinds = ['new', 'trial_start', 'trial_conversion', 'trial_not_converted', 'plan_change', 'cancellation', 'reactivation', 'churn'];
    const martMovements = await ownerRows<Record<string, string | number>>(`SELECT month::text AS month, ${kinds.map((k) => `${quoteIdent(k)}::int`).join(', ')} FROM ${m}.billing_loader__monthly_movements`);
    const unpivoted = martMovements.flatMap((r) => kinds.filter((k) => Number(r[k]) > 0).map((k) => ({ month: r.month, movement: k, contracts: Number(r[k]) })));
    expect(viewMovements.length).toBeGreaterThan(0);
    expect(unpivoted.sort((a, b) => `${a.month} ${a.movement}`.localeCompare(`${b.month} ${b.movement}`))).toEqual(viewMovements);

    // Trial conversion: trial_cohorts, cohort by cohort, and the truth's cohorts.
    const cols = 'cohort_month::text AS cohort_month, trials::int, converted::int, not_converted::int, still_in_trial::int, conversion_rate::text';
    const viewCohorts = await ownerRows(`SELECT ${cols} FROM ${quoteIdent(wh.schema)}.trial_cohorts ORDER BY cohort_month`);
    const martCohorts = await ownerRows(`SELECT ${cols} FROM ${m}.billing_loader__trial_conversion ORDER BY cohort_month`);
    expect(martCohorts.length).toBeGreaterThan(0);
    expect(martCohorts).toEqual(viewCohorts);
    const truthCohorts = trialCohorts(lifecycles(truth, builtAt), builtAt);
    expect(martCohorts.map(({ conversion_rate: _, ...r }) => r)).toEqual(truthCohorts);

    // MRR priced from the plan variants: mrr_monthly and mrr_movements, row by row (mrr.test.ts
    // holds those views to the sandbox truth).
    const mrrCols = (movement: (kind: string) => string) =>
      ['month::text AS month', 'currency', 'mrr::text', 'arr::text', 'customers::int', 'arpa::text', ...['new', 'expansion', 'contraction', 'churn', 'reactivation'].map((k) => `${movement(k)}::text AS ${k}`), 'net_new_mrr::text', 'starting_mrr::text', 'nrr::text', 'grr::text', 'starting_customers::int', 'churned_customers::int'].join(', ');
    const viewMrr = await ownerRows(`SELECT ${mrrCols((k) => k)} FROM ${quoteIdent(wh.schema)}.mrr_monthly ORDER BY month, currency NULLS FIRST`);
    const martMrr = await ownerRows(`SELECT ${mrrCols((k) => (k === 'churn' ? 'churned_mrr' : `${k}_mrr`))} FROM ${m}.billing_loader__mrr_by_month ORDER BY month, currency NULLS FIRST`);
    expect(viewMrr.filter((r) => r.currency !== null && Number(r.mrr) > 0).length).toBeGreaterThan(0);
    expect(martMrr).toEqual(viewMrr);
    const moveCols = 'month::text AS month, customer_id, currency, movement, previous_mrr::text, mrr::text, amount::text, previous_mrr_reporting::text, mrr_reporting::text, amount_reporting::text';
    const viewMrrMoves = await ownerRows(`SELECT ${moveCols} FROM ${quoteIdent(wh.schema)}.mrr_movements ORDER BY month, customer_id, currency`);
    const martMrrMoves = await ownerRows(`SELECT ${moveCols} FROM ${m}.billing_loader__mrr_movements ORDER BY month, customer_id, currency`);
    expect(viewMrrMoves.length).toBeGreaterThan(0);
    expect(martMrrMoves).toEqual(viewMrrMoves);
  }, 120_000);

  it('answers MetricFlow queries (mf query) with the marts\' numbers', async () => {
    const churn = await mfQuery(mf, host, tmp, [
      '--metrics',
      'billing_loader_churn_rate,billing_loader_churned_contracts,billing_loader_paying_contracts_at_period_start',
      '--group-by',
      'metric_time__month',
      '--order',
      'metric_time__month',
    ]);
    expect(churn.code, churn.output).toBe(0);
    const mart = await ownerRows<{ month: string; paying_at_start: number; churned: number }>(
      `SELECT month::text, paying_at_start::int, churned::int FROM ${quoteIdent(login)}.billing_loader__monthly_churn ORDER BY month`,
    );
    expect(churn.rows.map((r) => ({ month: r.metric_time__month!.slice(0, 10), paying_at_start: Number(r.billing_loader_paying_contracts_at_period_start), churned: Number(r.billing_loader_churned_contracts) }))).toEqual(mart);
    for (const r of churn.rows) {
      const paying = Number(r.billing_loader_paying_contracts_at_period_start);
      if (paying === 0) expect(r.billing_loader_churn_rate).toBe('');
      else expect(Number(r.billing_loader_churn_rate)).toBeCloseTo(Number(r.billing_loader_churned_contracts) / paying, 12);
    }

    const trials = await mfQuery(mf, host, tmp, ['--metrics', 'billing_loader_trial_conversion_rate,billing_loader_trials_started,billing_loader_trials_converted', '--group-by', 'metric_time__month', '--order', 'metric_time__month']);
    expect(trials.code, trials.output).toBe(0);
    const cohorts = await ownerRows<{ cohort_month: string; trials: number; converted: number; conversion_rate: string }>(
      `SELECT cohort_month::text, trials::int, converted::int, conversion_rate::text FROM ${quoteIdent(wh.schema)}.trial_cohorts ORDER BY cohort_month`,
    );
    expect(trials.rows.map((r) => ({ cohort_month: r.metric_time__month!.slice(0, 10), trials: Number(r.billing_loader_trials_started), converted: Number(r.billing_loader_trials_converted) }))).toEqual(
      cohorts.map(({ cohort_month, trials: n, converted }) => ({ cohort_month, trials: n, converted })),
    );
    for (const [i, r] of trials.rows.entries()) expect(Number(r.billing_loader_trial_conversion_rate).toFixed(4)).toBe(cohorts[i]!.conversion_rate);

    // The contract entity's new paying contracts are subscription_movements' new + trial_conversion.
    const paying = await mfQuery(mf, host, tmp, ['--metrics', 'billing_loader_new_paying_contracts', '--group-by', 'metric_time__month', '--order', 'metric_time__month']);
    expect(paying.code, paying.output).toBe(0);
    const movements = await ownerRows<{ month: string; n: number }>(
      `SELECT date_trunc('month', day)::date::text AS month, sum(contracts)::int AS n FROM ${quoteIdent(wh.schema)}.subscription_movements
        WHERE movement IN ('new', 'trial_conversion') GROUP BY 1 ORDER BY 1`,
    );
    expect(movements.length).toBeGreaterThan(0);
    // A contract that never paid has no paying_from: MetricFlow's row without a month, of no count.
    const byMonth = paying.rows.filter((r) => r.metric_time__month !== '');
    expect(byMonth.map((r) => ({ month: r.metric_time__month!.slice(0, 10), n: Number(r.billing_loader_new_paying_contracts) }))).toEqual(movements);

    // MRR per month and currency is mrr_monthly's, month by month (the empty currency: its reporting row).
    const mrr = await mfQuery(mf, host, tmp, [
      '--metrics',
      'billing_loader_mrr,billing_loader_mrr_paying_customers,billing_loader_net_new_mrr',
      '--group-by',
      'metric_time__month,billing_loader_mrr_by_month__currency',
      '--order',
      'metric_time__month',
    ]);
    expect(mrr.code, mrr.output).toBe(0);
    const num = (v: string | null | undefined) => (v === null || v === undefined || v === '' ? null : Number(v));
    const viewMrr = await ownerRows<{ month: string; currency: string | null; mrr: string | null; customers: number; net_new_mrr: string | null }>(
      `SELECT month::text, currency, mrr::text, customers::int, net_new_mrr::text FROM ${quoteIdent(wh.schema)}.mrr_monthly ORDER BY month, currency NULLS FIRST`,
    );
    expect(viewMrr.filter((r) => num(r.mrr)! > 0).length).toBeGreaterThan(0);
    const got = mrr.rows
      .map((r) => ({ month: r.metric_time__month!.slice(0, 10), currency: r.billing_loader_mrr_by_month__currency || null, mrr: num(r.billing_loader_mrr), customers: Number(r.billing_loader_mrr_paying_customers), net_new_mrr: num(r.billing_loader_net_new_mrr) }))
      .sort((a, b) => `${a.month} ${a.currency ?? ''}`.localeCompare(`${b.month} ${b.currency ?? ''}`));
    expect(got.map(({ month, currency, customers }) => ({ month, currency, customers }))).toEqual(viewMrr.map(({ month, currency, customers }) => ({ month, currency, customers })));
    for (const [i, r] of got.entries()) {
      const want = viewMrr[i]!;
      for (const k of ['mrr', 'net_new_mrr'] as const) {
        if (want[k] === null) expect(r[k], `${r.month} ${r.currency} ${k}`).toBeNull();
        else expect(r[k], `${r.month} ${r.currency} ${k}`).toBeCloseTo(Number(want[k]), 6);
      }
    }
  }, 300_000);

  it('fails the build when a month\'s churn rate is above 1 (a churn the lifecycle never saw paying)', async () => {
    // The two views the churn reads, copied; then one bad row: a churn day naming more contracts
    // than were paying at that month's start, none of them ever paying (what counting trials
    // that never paid as churn would look like).
    await copySchema(badChurn, ['metric_contract_lifecycle', 'subscription_movements']);
    const s = quoteIdent(badChurn);
    const [month] = await ownerRows<{ month: string; paying: number }>(
      `SELECT month::text, paying_at_start::int AS paying FROM ${quoteIdent(login)}.billing_loader__monthly_churn WHERE paying_at_start > 0 ORDER BY paying_at_start, month LIMIT 1`,
    );
    expect(month, 'a month with paying contracts').toBeDefined();
    const [free] = await ownerRows<{ day: string }>(
      `SELECT d::date::text AS day FROM generate_series($1::date, $1::date + 27, interval '1 day') AS d
        WHERE NOT EXISTS (SELECT FROM ${s}.subscription_movements m WHERE m.day = d::date AND m.movement = 'churn') ORDER BY d LIMIT 1`,
      [month!.month],
    );
    const ids = Array.from({ length: month!.paying + 1 }, (_, i) => `never-paid-${i}`);
    await owner.query(`INSERT INTO ${s}.subscription_movements (day, movement, contracts, contract_ids) VALUES ($1, 'churn', $2, $3)`, [free!.day, ids.length, ids]);

    const d: DbtDirs = { ...dirs('bad-churn'), profilesDir: join(tmp, 'scratch') };
    const { code, output, results } = await runDbt(dbt, ['build', '--select', '+billing_loader__monthly_churn+', '--indirect-selection', 'cautious', ...vars({ billing_loader_schema: badChurn })], d);
    expect(code, output).not.toBe(0);
    const ran = (results as RunResults).results;
    const bad = ran.filter((r) => r.status !== 'success' && r.status !== 'pass');
    // Exactly the range test fails, on exactly that month.
    expect(bad.map((r) => `${r.unique_id.replace(/\.[0-9a-f]{10}$/, '')}: ${r.status}`)).toEqual(['test.billing_loader.billing_loader_in_range_billing_loader__monthly_churn_churn_rate__1__0: fail']);
    expect(bad[0]!.failures).toBe(1);
    const rate = await ownerRows<{ churn_rate: string }>(`SELECT churn_rate::text FROM ${quoteIdent(scratch)}.billing_loader__monthly_churn WHERE month = $1`, [month!.month]);
    expect(Number(rate[0]!.churn_rate)).toBeGreaterThan(1);
  }, 300_000);

  it('checks source freshness on loaded_at: fresh on the scenario, an error past the threshold, a warning under a raised one', async () => {
    const fresh = await runDbt(dbt, ['source', 'freshness'], hostDirs(), host);
    expect(fresh.code, fresh.output).toBe(0);
    const freshResults = JSON.parse(await readFile(join(host, 'target', 'sources.json'), 'utf8')) as FreshnessResults;
    expect(freshResults.results.map((r) => r.unique_id).sort()).toEqual(
      ['contract_history', 'customer_history', 'invoice_history', 'payment_transaction_history', 'webhook_events'].map((t) => `source.billing_loader.billing.${t}`),
    );
    expect(freshResults.results.filter((r) => r.status !== 'pass')).toEqual([]);

    // A warehouse whose contracts were last loaded 100 hours ago (the default error threshold is
    // 72), the other checked types and the webhooks now.
    const pool = createPool({ databaseUrl: wh.databaseUrl, applicationName: 'dbt-package-test', log: createLogger('warn') });
    try {
      await migrate(pool, { schema: stale, log: createLogger('warn') });
    } finally {
      await pool.end();
    }
    await owner.query(
      `INSERT INTO ${quoteIdent(stale)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset, loaded_at)
       SELECT t, 'x', 1, now(), false, '{}', 'h', '{}', '{}', 0, 0, CASE WHEN t = 'Contract' THEN now() - interval '100 hours' ELSE now() END
         FROM unnest(ARRAY['Contract', 'Customer', 'Invoice', 'PaymentTransaction']) AS t`,
    );
    await owner.query(`INSERT INTO ${quoteIdent(stale)}.webhook_events (event_id, event, received_at, payload) VALUES (gen_random_uuid(), 'ContractChanged', now(), '{}')`);
    const statusOf = async (name: string, v: Record<string, string | number>) => {
      const d = dirs(name);
      const run = await runDbt(dbt, ['source', 'freshness', ...vars({ billing_loader_schema: stale, ...v })], d);
      const out = JSON.parse(await readFile(join(d.targetPath, 'sources.json'), 'utf8')) as FreshnessResults;
      return { code: run.code, output: run.output, status: Object.fromEntries(out.results.map((r) => [r.unique_id.replace('source.billing_loader.billing.', ''), r.status])) };
    };
    const errored = await statusOf('stale', {});
    expect(errored.code, errored.output).not.toBe(0);
    expect(errored.status).toEqual({ contract_history: 'error', customer_history: 'pass', invoice_history: 'pass', payment_transaction_history: 'pass', webhook_events: 'pass' });
    const warned = await statusOf('stale-raised', { billing_loader_freshness_error_after_hours: 200 });
    expect(warned.code, warned.output).toBe(0);
    expect(warned.status.contract_history).toBe('warn');
  }, 300_000);

  it('installs with the packages.yml snippet of docs/ANALYSTS.md (git, subdirectory, revision)', async () => {
    // The documented entry, pointed at this clone and its checked-out commit.
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: packageRoot, encoding: 'utf8' }).trim();
    const snippet = docBlock('yaml packages.yml');
    expect(snippet).toMatch(/^\s+- git: "[^"]+".*\n\s+subdirectory: analytics\/dbt\n\s+revision: .+$/m);
    const entry = snippet
      .replace(/^packages:\n/, '')
      .replace(/git: ".+"/, `git: ${JSON.stringify(`file://${packageRoot}`)}`)
      .replace(/revision: .+/, `revision: ${head}`);
    const dir = join(tmp, 'git-host');
    await writeHostProject(dir, entry, { billing_loader_schema: wh.schema });
    const deps = await runDbt(dbt, ['deps'], { profilesDir: tmp, targetPath: join(dir, 'target'), logPath: join(dir, 'logs') }, dir);
    expect(deps.code, deps.output).toBe(0);
    const installed = join(dir, 'dbt_packages', 'billing_loader', 'dbt_project.yml');
    expect(existsSync(installed), deps.output).toBe(true);
    expect(await readFile(installed, 'utf8')).toMatch(/^name: billing_loader$/m);
  }, 300_000);

  it('reports a failing source test as a failure (duplicate version, missing valid_from, unknown status)', async () => {
    // A crafted "warehouse" whose contract_history breaks three of the package's source tests.
    await owner.query(`CREATE SCHEMA ${quoteIdent(crafted)}`);
    await owner.query(`CREATE TABLE ${quoteIdent(crafted)}.contract_history AS SELECT * FROM ${quoteIdent(wh.schema)}.contract_history WHERE false`);
    await owner.query(
      `INSERT INTO ${quoteIdent(crafted)}.contract_history (resource_id, version, valid_from, is_current, deleted, status)
       VALUES ('c-1', 1, now(), false, false, 'Active'), ('c-1', 1, NULL, true, false, 'Paused')`,
    );
    await owner.query(`GRANT USAGE ON SCHEMA ${quoteIdent(crafted)} TO ${quoteIdent(login)}`);
    await owner.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${quoteIdent(crafted)} TO ${quoteIdent(login)}`);

    const { code, output, results } = await runDbt(dbt, ['test', '--select', 'source:billing.contract_history', ...vars({ billing_loader_schema: crafted })], dirs('crafted'));
    expect(code, output).not.toBe(0);
    const status = (name: string) => (results as RunResults).results.find((r) => r.unique_id.startsWith(`test.billing_loader.${name}`))?.status;
    expect(status('source_unique_combination_billing_contract_history_resource_id__version')).toBe('fail');
    expect(status('source_not_null_billing_contract_history_valid_from')).toBe('fail');
    // An unknown status is upstream data, not a broken warehouse: a warning.
    expect(status('source_accepted_values_billing_contract_history_status')).toBe('warn');
    expect(status('source_not_null_billing_contract_history_resource_id')).toBe('pass');
  }, 300_000);
});
