import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsDir } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';
import { appendVersions } from '../helpers/append-versions.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log: silentLogger });
const schemas: string[] = [];
let dir: string;
let userFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'typed-columns-file-'));
  userFile = join(dir, 'my-typed-columns.json');
  // A user's additions: a contract's ReferenceCode as it is stored, and a customer's whole address
  // (both documented fields, docs/WAREHOUSE.md "Typed columns").
  await writeFile(userFile, JSON.stringify({
    Contract: [{ column: 'reference_code_raw', key: 'ReferenceCode', type: 'jsonb' }],
    Customer: [{ column: 'address', key: 'Address', type: 'jsonb' }],
  }));
});

afterAll(async () => {
  for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await rm(dir, { recursive: true, force: true });
  await pool.end();
});

async function columns(schema: string, view: string): Promise<string[]> {
  const { rows } = await pool.query<{ c: string }>(`SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, [schema, view]);
  return rows.map((r) => r.c);
}

describe('TYPED_COLUMNS_FILE: typed columns of the user\'s own, outside the package', () => {
  it('adds its columns beside the packaged ones, keeps them through a re-migrate and an upgrade from the previous release', async () => {
    // The previous release's files (test/fixtures/release-0.1.0) with the user's file beside them.
    const schema = `${config.databaseSchema}_upgrade`;
    schemas.push(schema);
    const s = quoteIdent(schema);
    const older = await mkdtemp(join(dir, 'migrations-'));
    for (const name of await readdir(migrationsDir)) if (name < '0012') await cp(join(migrationsDir, name), join(older, name));
    const release = join(packageRoot, 'test', 'fixtures', 'release-0.1.0');
    await migrate(pool, { schema, log: silentLogger, dir: older, typedColumnsFile: join(release, 'typed-columns.json'), metricViewsFile: join(release, 'metric-views.sql'), userTypedColumnsFile: userFile });
    expect(await columns(schema, 'contract_history')).toContain('reference_code_raw');
    await appendVersions(pool, schema, [
      { type: 'Contract', id: 'c-1', version: 1, at: '2025-03-01T10:00:00Z', body: { ReferenceCode: 'R-1', LifecycleStatus: 'Active' } },
      { type: 'Customer', id: 'k-1', version: 1, at: '2025-03-01T10:00:00Z', body: { address: { City: 'Berlin', Country: 'DE' } } },
    ]);

    // Today's release: its packaged mapping and the user's file, merged.
    const upgraded = await migrate(pool, { schema, log: silentLogger, userTypedColumnsFile: userFile });
    expect(upgraded.derivedObjects).toBe('recreated');
    const contract = await columns(schema, 'contract_history');
    expect(contract).toEqual(expect.arrayContaining(['reference_code', 'status', 'reference_code_raw']));
    expect(contract.indexOf('reference_code_raw')).toBe(contract.length - 1);
    expect((await pool.query(`SELECT reference_code, reference_code_raw FROM ${s}.contract_current`)).rows).toEqual([{ reference_code: 'R-1', reference_code_raw: 'R-1' }]);
    expect((await pool.query(`SELECT address FROM ${s}.customer_as_of('infinity')`)).rows).toEqual([{ address: { City: 'Berlin', Country: 'DE' } }]);

    // Migrating again changes nothing, and the columns stay.
    expect((await migrate(pool, { schema, log: silentLogger, userTypedColumnsFile: userFile })).derivedObjects).toBe('unchanged');
    expect(await columns(schema, 'customer_current')).toContain('address');

    // A view or function dropped by hand is made again, and only it. (customer_current itself a
    // metric view reads: it can only be dropped with them.)
    await pool.query(`DROP FUNCTION ${s}.customer_as_of(timestamptz)`);
    await pool.query(`DROP VIEW ${s}.invoice_current`);
    expect((await migrate(pool, { schema, log: silentLogger, userTypedColumnsFile: userFile })).derivedObjects).toBe('recreated');
    expect(await columns(schema, 'invoice_current')).toContain('resource_id');
    expect(await columns(schema, 'customer_current')).toContain('address');
    expect((await pool.query(`SELECT address FROM ${s}.customer_as_of('infinity')`)).rows).toEqual([{ address: { City: 'Berlin', Country: 'DE' } }]);
  });

  it('the migrate command reads the file TYPED_COLUMNS_FILE names, and refuses a file that is not there in one line', async () => {
    const schema = `${config.databaseSchema}_cli`;
    schemas.push(schema);
    const env = { DATABASE_URL: config.databaseUrl, DATABASE_SCHEMA: schema, TYPED_COLUMNS_FILE: userFile };
    const first = await runCli(['migrate'], env);
    expect(first.code, first.stderr).toBe(0);
    expect(await columns(schema, 'contract_current')).toContain('reference_code_raw');
    const again = await runCli(['migrate'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/views unchanged/);
    expect(await columns(schema, 'contract_current')).toContain('reference_code_raw');

    const missing = await runCli(['migrate'], { ...env, TYPED_COLUMNS_FILE: join(dir, 'nowhere.json') });
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toMatch(/^billing-loader: TYPED_COLUMNS_FILE: no readable file at '.*nowhere\.json'$/);
  });
});
