import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteIdent } from '../../src/db/pool.js';
import { ANALYST_ROLE } from '../../src/warehouse/resource-types.js';
import { dbtProfile, ensureDbt, pythonAvailable, runDbt, type DbtDirs, type RunResults } from '../helpers/dbt.js';
import { scenarioWarehouse, type ScenarioWarehouse } from '../helpers/scenario-warehouse.js';

interface Manifest {
  nodes: Record<string, { resource_type: string }>;
}

const python = pythonAvailable();

/**
 * The analysts' dbt package built with the pinned dbt against the scenario warehouse, as a login
 * that holds only billing_loader_analyst and owns a schema of its own for the models: the package
 * must need nothing more than the analyst role, and must never write into the warehouse schema.
 */
describe.skipIf(!python)(`the dbt package analytics/dbt${python ? '' : ' (skipped: no python3 on this machine to install dbt with)'}`, () => {
  const suffix = randomBytes(4).toString('hex');
  const login = `dbt_${suffix}`;
  const crafted = `dbt_${suffix}_crafted`;
  let wh: ScenarioWarehouse;
  let dbt: string;
  let owner: pg.Client;
  let tmp: string;

  const dirs = (name: string): DbtDirs => ({ profilesDir: tmp, targetPath: join(tmp, name, 'target'), logPath: join(tmp, name, 'logs') });
  const vars = (schema: string) => ['--vars', JSON.stringify({ billing_schema: schema })];

  beforeAll(async () => {
    // The first run of a clean clone installs dbt (pip: half a minute, two on a loaded machine)
    // while the scenario fills.
    const [warehouse, install] = await Promise.all([scenarioWarehouse(), ensureDbt()]);
    wh = warehouse;
    dbt = install.dbt;
    owner = new pg.Client({ connectionString: wh.databaseUrl, application_name: 'dbt-package-test' });
    await owner.connect();
    await owner.query(`CREATE ROLE ${quoteIdent(login)} LOGIN IN ROLE ${quoteIdent(ANALYST_ROLE)}`);
    await owner.query(`CREATE SCHEMA ${quoteIdent(login)} AUTHORIZATION ${quoteIdent(login)}`);
    tmp = await mkdtemp(join(tmpdir(), 'dbt-package-'));
    const url = new URL(wh.databaseUrl);
    url.username = login;
    url.password = '';
    await writeFile(join(tmp, 'profiles.yml'), dbtProfile(url.toString(), login));
  }, 600_000);

  afterAll(async () => {
    if (owner) {
      await owner.query(`DROP SCHEMA IF EXISTS ${quoteIdent(login)} CASCADE`);
      await owner.query(`DROP SCHEMA IF EXISTS ${quoteIdent(crafted)} CASCADE`);
      await owner.query(`DROP ROLE IF EXISTS ${quoteIdent(login)}`);
      await owner.end();
    }
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('builds every model and passes every test on the scenario warehouse', async () => {
    const d = dirs('build');
    const { code, output, results } = await runDbt(dbt, ['build', ...vars(wh.schema)], d);
    expect(code, output).toBe(0);
    const manifest = JSON.parse(await readFile(join(d.targetPath, 'manifest.json'), 'utf8')) as Manifest;
    const expected = Object.entries(manifest.nodes)
      .filter(([, n]) => n.resource_type === 'model' || n.resource_type === 'test')
      .map(([id]) => id)
      .sort();
    const ran = (results as RunResults).results;
    // Every model and test of the package ran (none left out or skipped), and none failed or warned.
    expect(ran.map((r) => r.unique_id).sort()).toEqual(expected);
    expect(ran.filter((r) => r.status !== 'success' && r.status !== 'pass').map((r) => `${r.unique_id}: ${r.status} ${r.message ?? ''}`)).toEqual([]);
    const models = expected.filter((id) => id.startsWith('model.'));
    const tests = expected.filter((id) => id.startsWith('test.'));
    expect(models.length).toBeGreaterThanOrEqual(12);
    expect(tests.length).toBeGreaterThanOrEqual(150);
    for (const t of ['contract', 'customer', 'order', 'invoice', 'invoice_draft', 'dunning', 'payment_transaction', 'payment_escalation_process']) {
      expect(tests.some((id) => id.startsWith(`test.billing_loader.source_unique_combination_billing_${t}_history_resource_id__version`)), t).toBe(true);
    }

    // The models landed in the login's own schema, and the scenario's prices give a revenue.
    for (const mart of ['mart_monthly_churn', 'mart_monthly_movements', 'mart_trial_conversion']) {
      const { rows: n } = await owner.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(login)}.${quoteIdent(mart)}`);
      expect(n[0]!.n, mart).toBeGreaterThan(0);
    }
    const { rows } = await owner.query<{ months: number; mrr: string }>(`SELECT count(DISTINCT month)::int AS months, sum(mrr_net) AS mrr FROM ${quoteIdent(login)}.mart_mrr_monthly`);
    expect(rows[0]!.months).toBeGreaterThan(0);
    expect(Number(rows[0]!.mrr)).toBeGreaterThan(0);
    const staged = await owner.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(login)}.stg_contract_versions`);
    const history = await owner.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(wh.schema)}.contract_history`);
    expect(staged.rows[0]!.n).toBe(history.rows[0]!.n);
    expect(staged.rows[0]!.n).toBeGreaterThan(0);
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

    const { code, output, results } = await runDbt(dbt, ['test', '--select', 'source:billing.contract_history', ...vars(crafted)], dirs('crafted'));
    expect(code, output).not.toBe(0);
    const status = (name: string) => (results as RunResults).results.find((r) => r.unique_id.startsWith(`test.billing_loader.${name}`))?.status;
    expect(status('source_unique_combination_billing_contract_history_resource_id__version')).toBe('fail');
    expect(status('source_not_null_billing_contract_history_valid_from')).toBe('fail');
    // An unknown status is upstream data, not a broken warehouse: a warning.
    expect(status('source_accepted_values_billing_contract_history_status')).toBe('warn');
    expect(status('source_not_null_billing_contract_history_resource_id')).toBe('pass');
  }, 300_000);
});
