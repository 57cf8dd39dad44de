import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, migrationsDir } from '../../src/db/migrate.js';
import { migrationChecksum } from '../../src/db/migration-checksum.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { typedColumnsFile } from '../../src/warehouse/typed-columns.js';
import { appendVersions, insertVersions, type AppendedVersion } from '../helpers/append-versions.js';
import { asWriter } from '../helpers/as-role.js';
import { testConfig } from '../helpers/environment.js';
import { migrateBefore } from '../helpers/release-warehouse.js';

const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const schemas: string[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  await pool.end();
});

async function freshWarehouse(name: string, options: { typedColumnsFile?: string } = {}): Promise<string> {
  const schema = `${config.databaseSchema}_${name}`;
  if (!schemas.includes(schema)) schemas.push(schema);
  await migrate(pool, { schema, log, ...options });
  return schema;
}

/** One INSERT statement (one sink batch: the triggers run once per statement) as the writer role. */
const append = (schema: string, versions: AppendedVersion[]) => appendVersions(pool, schema, versions);

async function facts(schema: string, type: string): Promise<{ resource_id: string; version: number; valid_from: string; valid_to: string | null; deleted: boolean; fields: unknown }[]> {
  const { rows } = await pool.query(
    `SELECT resource_id, version, to_char(valid_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS valid_from,
            to_char(valid_to AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS valid_to, deleted, fields
       FROM ${quoteIdent(schema)}.version_facts WHERE resource_type = $1 ORDER BY resource_id, version`,
    [type],
  );
  return rows;
}

/** The rows of current_facts, and what they must equal: the latest row of version_facts per resource. */
async function currentFacts(schema: string): Promise<Record<string, unknown>[]> {
  const { rows } = await pool.query(
    `SELECT resource_type, resource_id, version, valid_from, deleted, fields FROM ${quoteIdent(schema)}.current_facts ORDER BY 1, 2`,
  );
  return rows;
}
async function latestFacts(schema: string): Promise<Record<string, unknown>[]> {
  const { rows } = await pool.query(
    `SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version, valid_from, deleted, fields
       FROM ${quoteIdent(schema)}.version_facts ORDER BY resource_type, resource_id, version DESC`,
  );
  return rows;
}

/** A contract version on day `day` of January 2025 (`null`: a deletion). */
const contract = (id: string, version: number, day: number, body: Record<string, unknown> | null = { PlanId: `p-${version}` }): AppendedVersion => ({
  type: 'Contract', id, version, at: `2025-01-${String(day).padStart(2, '0')}T00:00:00Z`, body,
});

const pascal = { Id: 'c-1', PlanId: 'p-1', StartDate: '2025-01-01T00:00:00Z', LifecycleStatus: 'Active', Phases: [{ Type: 'Trial' }], Balance: -5, Name: 'not a fact' };
const camel = { id: 'c-2', planId: 'p-1', startDate: '2025-01-01T00:00:00Z', lifecycleStatus: 'Active', phases: [{ Type: 'Trial' }], balance: -5, name: 'not a fact' };
const shouting = { ID: 'c-3', PLANID: 'p-1', STARTDATE: '2025-01-01T00:00:00Z', LIFECYCLESTATUS: 'Active', PHASES: [{ Type: 'Trial' }], BALANCE: -5, NAME: 'not a fact' };
const contractFields = { planid: 'p-1', startdate: '2025-01-01T00:00:00Z', lifecyclestatus: 'Active', phases: [{ Type: 'Trial' }], balance: -5 };

describe('version facts: each version\'s validity and the fields the analyst layer reads, kept by the database', () => {
  it('stores the typed columns\' and metric views\' fields under lower-case keys, the same whatever the letter case of the body, and the views read them', async () => {
    const schema = await freshWarehouse('case');
    await append(schema, [
      { type: 'Contract', id: 'c-1', version: 1, at: '2025-01-01T00:00:00Z', body: pascal },
      { type: 'Contract', id: 'c-2', version: 1, at: '2025-01-01T00:00:00Z', body: camel },
      { type: 'Contract', id: 'c-3', version: 1, at: '2025-01-01T00:00:00Z', body: shouting },
      // A body spelling one key twice: the spelling that sorts first (capitals first) wins.
      { type: 'Contract', id: 'c-4', version: 1, at: '2025-01-01T00:00:00Z', body: { planid: 'folded', PlanId: 'declared', planId: 'camel' } },
      { type: 'Customer', id: 'k-1', version: 1, at: '2025-01-01T00:00:00Z', body: { id: 'k-1', unknownKey: 1 } },
    ]);
    const rows = await facts(schema, 'Contract');
    expect(rows.map((r) => r.fields)).toEqual([contractFields, contractFields, contractFields, { planid: 'declared' }]);
    expect((await facts(schema, 'Customer')).map((r) => r.fields)).toEqual([null]);
    const view = await pool.query(`SELECT resource_id, status, plan_id, balance FROM ${quoteIdent(schema)}.contract_current ORDER BY resource_id`);
    expect(view.rows).toEqual([
      { resource_id: 'c-1', status: 'Active', plan_id: 'p-1', balance: '-5' },
      { resource_id: 'c-2', status: 'Active', plan_id: 'p-1', balance: '-5' },
      { resource_id: 'c-3', status: 'Active', plan_id: 'p-1', balance: '-5' },
      { resource_id: 'c-4', status: null, plan_id: 'declared', balance: null },
    ]);
  });

  it('valid_to is the next version\'s valid_from, within one batch, across batches, after a deletion and when a late version fills a gap', async () => {
    const schema = await freshWarehouse('validto');
    await append(schema, [contract('a', 1, 1), contract('a', 2, 2), contract('b', 1, 1), contract('c', 1, 1), contract('c', 2, 3)]);
    await append(schema, [contract('a', 3, 5), contract('b', 2, 6, null)]);
    await append(schema, [contract('b', 3, 7)]);
    // c's version 4 arrives before its version 3 (a late record filling a gap).
    await append(schema, [contract('c', 4, 9)]);
    await append(schema, [contract('c', 3, 8)]);
    const rows = (await facts(schema, 'Contract')).map((r) => [r.resource_id, r.version, r.valid_from.slice(0, 10), r.valid_to?.slice(0, 10) ?? null, r.deleted]);
    expect(rows).toEqual([
      ['a', 1, '2025-01-01', '2025-01-02', false],
      ['a', 2, '2025-01-02', '2025-01-05', false],
      ['a', 3, '2025-01-05', null, false],
      ['b', 1, '2025-01-01', '2025-01-06', false],
      ['b', 2, '2025-01-06', '2025-01-07', true],
      ['b', 3, '2025-01-07', null, false],
      ['c', 1, '2025-01-01', '2025-01-03', false],
      ['c', 2, '2025-01-03', '2025-01-08', false],
      ['c', 3, '2025-01-08', '2025-01-09', false],
      ['c', 4, '2025-01-09', null, false],
    ]);
    const history = await pool.query(`SELECT resource_id, version, is_current FROM ${quoteIdent(schema)}.contract_history WHERE is_current ORDER BY 1`);
    expect(history.rows).toEqual([
      { resource_id: 'a', version: 3, is_current: true },
      { resource_id: 'b', version: 3, is_current: true },
      { resource_id: 'c', version: 4, is_current: true },
    ]);
    const asOf = await pool.query(`SELECT resource_id, version FROM ${quoteIdent(schema)}.contract_as_of('2025-01-06T12:00:00Z') ORDER BY 1`);
    expect(asOf.rows).toEqual([{ resource_id: 'a', version: 3 }, { resource_id: 'c', version: 2 }]);
  });

  it('current_facts holds each resource\'s latest version: within a batch, across batches, after a deletion, and not replaced by a late version below it', async () => {
    const schema = await freshWarehouse('current');
    await append(schema, [contract('a', 1, 1), contract('a', 2, 2), contract('b', 1, 1), contract('c', 1, 1), contract('c', 2, 3)]);
    await append(schema, [contract('a', 3, 5), contract('b', 2, 6, null)]);
    await append(schema, [contract('c', 4, 9)]);
    // c's version 3 arrives after its version 4: the head stays 4.
    await append(schema, [contract('c', 3, 8)]);
    await append(schema, [{ type: 'Customer', id: 'k-1', version: 1, at: '2025-01-01T00:00:00Z', body: { Id: 'k-1' } }]);
    expect(await currentFacts(schema)).toEqual(await latestFacts(schema));
    expect((await currentFacts(schema)).map((r) => [r.resource_type, r.resource_id, r.version, r.deleted])).toEqual([
      ['Contract', 'a', 3, false],
      ['Contract', 'b', 2, true],
      ['Contract', 'c', 4, false],
      ['Customer', 'k-1', 1, false],
    ]);
    const view = await pool.query(`SELECT resource_id, version, plan_id, valid_to, is_current FROM ${quoteIdent(schema)}.contract_current ORDER BY 1`);
    expect(view.rows).toEqual([
      { resource_id: 'a', version: 3, plan_id: 'p-3', valid_to: null, is_current: true },
      { resource_id: 'c', version: 4, plan_id: 'p-4', valid_to: null, is_current: true },
    ]);
  });

  it('valid_to and the heads equal their definitions over the history, whatever order and grouping the versions arrive in', async () => {
    const schema = await freshWarehouse('orders');
    const s = quoteIdent(schema);
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      // A seeded shuffle of 12 resources' versions, cut into statements of 1 to 7 rows: in-order
      // appends, late records below the head, and statements holding both for one resource.
      let state = seed;
      const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      const versions: AppendedVersion[] = [];
      for (let r = 0; r < 12; r++) {
        for (let v = 1; v <= 1 + ((r + seed) % 6); v++) versions.push(contract(`s${seed}-${r}`, v, v * 4 + (r % 3), v === 3 && r % 4 === 0 ? null : { PlanId: `p-${v}` }));
      }
      for (let i = versions.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [versions[i], versions[j]] = [versions[j]!, versions[i]!];
      }
      for (let i = 0; i < versions.length; ) {
        const n = 1 + Math.floor(random() * 7);
        await append(schema, versions.slice(i, i + n));
        i += n;
      }
    }
    const stored = await pool.query(`SELECT resource_id, version, valid_from, valid_to, deleted FROM ${s}.version_facts ORDER BY 1, 2`);
    const truth = await pool.query(
      `SELECT resource_id, version, fetched_at AS valid_from, lead(fetched_at) OVER (PARTITION BY resource_type, resource_id ORDER BY version) AS valid_to, deleted
         FROM ${s}.resource_versions ORDER BY 1, 2`,
    );
    expect(stored.rows.length).toBeGreaterThan(150);
    expect(stored.rows).toEqual(truth.rows);
    expect(await currentFacts(schema)).toEqual(await latestFacts(schema));
    const heads = await pool.query(`SELECT resource_type, resource_id, version, fetched_at AS valid_from, deleted FROM ${s}.resource_heads ORDER BY 1, 2`);
    const latest = await pool.query(`SELECT resource_type, resource_id, version, valid_from, deleted FROM ${s}.resource_latest ORDER BY 1, 2`);
    const expected = (await latestFacts(schema)).map(({ fields: _, ...rest }) => rest);
    expect(heads.rows).toEqual(expected);
    expect(latest.rows).toEqual(expected);
  });

  it('an append writes each version\'s facts once: the head a newer version closes is moved, not rewritten', async () => {
    // A closed head rewritten in place is a second row version with an entry in every index of
    // the facts (valid_to is indexed, so the update is never HOT): the largest part of what the
    // facts cost the sink after the extraction (docs/BENCHMARKS.md, "The sink against plain COPY").
    const schema = await freshWarehouse('once');
    await append(schema, [contract('a', 1, 1), contract('b', 1, 1), contract('c', 1, 1)]);
    await asWriter(pool, async (client) => {
      // This backend's counts not yet reported include its earlier transactions': the difference.
      const counts = async () =>
        (
          await client.query<{ relname: string; inserted: number; updated: number }>(
            `SELECT relname, n_tup_ins::int AS inserted, n_tup_upd::int AS updated FROM pg_stat_xact_user_tables
              WHERE schemaname = $1 AND relname LIKE '%version_facts' ORDER BY 1`,
            [schema],
          )
        ).rows;
      const before = new Map((await counts()).map((r) => [r.relname, r]));
      await insertVersions(client, schema, [contract('a', 2, 2), contract('a', 3, 3), contract('b', 2, 4, null)]);
      const written = (await counts()).map((r) => ({
        relname: r.relname,
        inserted: r.inserted - (before.get(r.relname)?.inserted ?? 0),
        updated: r.updated - (before.get(r.relname)?.updated ?? 0),
      }));
      // a's versions 1 and 2 and b's version 1 are closed: three rows written, none rewritten.
      expect(written).toEqual([{ relname: 'closed_version_facts', inserted: 3, updated: 0 }]);
    });
    const rows = (await facts(schema, 'Contract')).map((r) => [r.resource_id, r.version, r.valid_to?.slice(0, 10) ?? null, r.deleted]);
    expect(rows).toEqual([
      ['a', 1, '2025-01-02', false],
      ['a', 2, '2025-01-03', false],
      ['a', 3, null, false],
      ['b', 1, '2025-01-04', false],
      ['b', 2, null, true],
      ['c', 1, null, false],
    ]);
    expect(await currentFacts(schema)).toEqual(await latestFacts(schema));
  });

  it('migrating a warehouse that already holds versions fills their facts', async () => {
    // The warehouse as the release before version_facts left it: the SQL files up to 0004 applied
    // and recorded as migrate does (its analyst step of today needs version_facts).
    const schema = `${config.databaseSchema}_backfill`;
    schemas.push(schema);
    await pool.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await pool.query(`CREATE TABLE ${quoteIdent(schema)}.schema_migrations (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const name of ['0001_webhook_events.sql', '0002_resource_versions.sql', '0003_loaded_at.sql', '0004_analyst_layer.sql']) {
      const sql = await readFile(join(migrationsDir, name), 'utf8');
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}, public`);
        await client.query(sql);
        await client.query(`INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)`, [name, migrationChecksum(sql)]);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    }
    await append(schema, [
      { type: 'Contract', id: 'c-1', version: 1, at: '2025-01-01T00:00:00Z', body: pascal },
      { type: 'Contract', id: 'c-2', version: 1, at: '2025-01-01T00:00:00Z', body: camel },
    ]);
    await append(schema, [{ type: 'Contract', id: 'c-1', version: 2, at: '2025-01-02T00:00:00Z', body: shouting }]);
    await freshWarehouse('backfill');
    expect(await facts(schema, 'Contract')).toEqual([
      { resource_id: 'c-1', version: 1, valid_from: '2025-01-01T00:00:00Z', valid_to: '2025-01-02T00:00:00Z', deleted: false, fields: contractFields },
      { resource_id: 'c-1', version: 2, valid_from: '2025-01-02T00:00:00Z', valid_to: null, deleted: false, fields: contractFields },
      { resource_id: 'c-2', version: 1, valid_from: '2025-01-01T00:00:00Z', valid_to: null, deleted: false, fields: contractFields },
    ]);
    expect(await currentFacts(schema)).toEqual(await latestFacts(schema));
    expect((await currentFacts(schema)).length).toBe(2);
    // The contract counts are keyed by the fields migrate extracted after the migrations ran.
    const counts = await pool.query(`SELECT status, plan_id, contracts::int FROM ${quoteIdent(schema)}.contract_counts_as_of('2025-01-03T00:00:00Z')`);
    expect(counts.rows).toEqual([{ status: 'Active', plan_id: 'p-1', contracts: 2 }]);
  });

  it('splitting the facts (migration 0025) keeps every row, and stops rather than drop another schema\'s view over the warehouse', async () => {
    // The warehouse as the release before 0025 left it: today's files before it, with history.
    const schema = `${config.databaseSchema}_split`;
    const outside = `${schema}_models`;
    schemas.push(schema, outside);
    await migrateBefore(pool, schema, log, '0025');
    await append(schema, [contract('a', 1, 1), contract('a', 2, 2), contract('b', 1, 1)]);
    await append(schema, [contract('a', 3, 3), contract('b', 2, 4, null)]);
    const before = await facts(schema, 'Contract');
    expect(before).toHaveLength(5);
    // A dbt model built as a view in a schema of its own.
    await pool.query(`CREATE SCHEMA ${quoteIdent(outside)}`);
    await pool.query(`CREATE VIEW ${quoteIdent(outside)}.contracts AS SELECT resource_id FROM ${quoteIdent(schema)}.contract_history`);
    await expect(migrate(pool, { schema, log })).rejects.toThrow(/migration 0025 re-creates the warehouse's views, and these objects of other schemas depend on them: .*contracts/);
    // Nothing changed: the model and the one table of facts are there.
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${quoteIdent(outside)}.contracts`)).rows[0].n).toBe(5);
    expect((await pool.query(`SELECT to_regclass($1) AS t`, [`${quoteIdent(schema)}.closed_version_facts`])).rows[0].t).toBeNull();
    await pool.query(`DROP VIEW ${quoteIdent(outside)}.contracts`);
    await migrate(pool, { schema, log });
    expect(await facts(schema, 'Contract')).toEqual(before);
    expect(await currentFacts(schema)).toEqual(await latestFacts(schema));
    const closed = await pool.query(`SELECT resource_id, version FROM ${quoteIdent(schema)}.closed_version_facts ORDER BY 1, 2`);
    expect(closed.rows).toEqual([{ resource_id: 'a', version: 1 }, { resource_id: 'a', version: 2 }, { resource_id: 'b', version: 1 }]);
    // And the trigger of 0025 carries on from the migrated rows.
    await append(schema, [contract('a', 4, 5)]);
    expect((await facts(schema, 'Contract')).map((r) => [r.resource_id, r.version, r.valid_to?.slice(0, 10) ?? null])).toEqual([
      ['a', 1, '2025-01-02'], ['a', 2, '2025-01-03'], ['a', 3, '2025-01-05'], ['a', 4, null], ['b', 1, '2025-01-04'], ['b', 2, null],
    ]);
  });

  it('a typed column added to the mapping is re-extracted from the stored bodies when migrate runs again', async () => {
    const schema = await freshWarehouse('mapping');
    await append(schema, [
      { type: 'Customer', id: 'k-1', version: 1, at: '2025-01-01T00:00:00Z', body: { Id: 'k-1', NickName: 'Kim' } },
      { type: 'Customer', id: 'k-2', version: 1, at: '2025-01-01T00:00:00Z', body: { id: 'k-2', nickname: 'Lee' } },
    ]);
    const dir = await mkdtemp(join(tmpdir(), 'billing-loader-mapping-'));
    dirs.push(dir);
    const mapping = JSON.parse(await readFile(typedColumnsFile, 'utf8')) as Record<string, unknown[]>;
    mapping.Customer = [...mapping.Customer!, { column: 'nickname', key: 'NickName', type: 'text' }];
    const file = join(dir, 'typed-columns.json');
    await writeFile(file, JSON.stringify(mapping));
    await freshWarehouse('mapping', { typedColumnsFile: file });
    const view = await pool.query(`SELECT resource_id, nickname FROM ${quoteIdent(schema)}.customer_history ORDER BY 1`);
    expect(view.rows).toEqual([{ resource_id: 'k-1', nickname: 'Kim' }, { resource_id: 'k-2', nickname: 'Lee' }]);
    const current = await pool.query(`SELECT resource_id, nickname FROM ${quoteIdent(schema)}.customer_current ORDER BY 1`);
    expect(current.rows).toEqual([{ resource_id: 'k-1', nickname: 'Kim' }, { resource_id: 'k-2', nickname: 'Lee' }]);
    expect(await currentFacts(schema)).toEqual(await latestFacts(schema));
    const keys = await pool.query(`SELECT keys FROM ${quoteIdent(schema)}.version_facts_keys WHERE resource_type = 'Customer'`);
    expect(keys.rows[0].keys).toContain('nickname');
  });
});
