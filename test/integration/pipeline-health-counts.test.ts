import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { createRandom } from '../../src/simulator/seeded-random.js';
import { WRITER_ROLE } from '../../src/warehouse/resource-types.js';
import { appendWebhooks } from '../helpers/append-versions.js';
import { asAnalyst, asWriter } from '../helpers/as-role.js';
import { testConfig } from '../helpers/environment.js';
import { migrateAsRelease010 } from '../helpers/release-warehouse.js';

const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const schemas: string[] = [];

afterAll(async () => {
  for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await pool.end();
});

/** One version to append with its load time (loaded_at is the column pipeline_health counts by). */
interface Loaded {
  /** Customer unless given. */
  type?: string;
  id: string;
  version: number;
  loadedAt: string;
  sources?: readonly string[];
}

const INSERT = (schema: string) => `
  INSERT INTO ${quoteIdent(schema)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset, loaded_at)
  SELECT t, id, v, at, false, '{"DisplayName":"x"}', 'h' || ord, COALESCE(s::uuid[], '{}'), array_fill('Webhook'::text, ARRAY[cardinality(COALESCE(s::uuid[], '{}'))]), 0, ord, at
    FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::text[], $5::text[]) WITH ORDINALITY AS x(id, v, at, s, t, ord)`;

const params = (rows: readonly Loaded[]) => [
  rows.map((r) => r.id), rows.map((r) => r.version), rows.map((r) => r.loadedAt), rows.map((r) => `{${(r.sources ?? []).join(',')}}`), rows.map((r) => r.type ?? 'Customer'),
];

/** Appends `rows` in one statement, in a transaction of the writer role (as one sink batch). */
async function append(schema: string, rows: readonly Loaded[]): Promise<void> {
  await asWriter(pool, (client) => client.query(INSERT(schema), params(rows)));
}

/** Seeded loads: versions of 30 customers and contracts over minutes 10:00-10:09 of one day, in statements of 1 to 40 rows. */
function loads(seed: number): Loaded[][] {
  const random = createRandom(seed).next;
  const rows: Loaded[] = [];
  for (let c = 0; c < 30; c++) {
    const n = 1 + Math.floor(random() * 12);
    for (let v = 1; v <= n; v++) rows.push({ type: c % 3 === 0 ? 'Contract' : 'Customer', id: `cu-${seed}-${c}`, version: v, loadedAt: new Date(Date.UTC(2025, 7, 1, 10, 0, 0) + Math.floor(random() * 600_000)).toISOString() });
  }
  const statements: Loaded[][] = [];
  for (let i = 0; i < rows.length; ) {
    const n = 1 + Math.floor(random() * 40);
    statements.push(rows.slice(i, i + n));
    i += n;
  }
  return statements;
}

/**
 * pipeline_health's versions per minute against the versions counted directly by their minute of
 * loaded_at, and latest_loaded_at(type) against the latest loaded_at of the type's versions.
 */
async function compare(schema: string): Promise<void> {
  const s = quoteIdent(schema);
  const counted = await pool.query(`SELECT minute, versions::int FROM ${s}.pipeline_health WHERE versions > 0 ORDER BY 1`);
  const truth = await pool.query(`SELECT date_trunc('minute', loaded_at, 'UTC') AS minute, count(*)::int AS versions FROM ${s}.resource_versions GROUP BY 1 ORDER BY 1`);
  expect(truth.rows.length).toBeGreaterThan(0);
  expect(counted.rows).toEqual(truth.rows);
  for (const type of ['Customer', 'Contract', 'Invoice']) {
    const { rows } = await pool.query(`SELECT ${s}.latest_loaded_at($1) AS kept, (SELECT max(loaded_at) FROM ${s}.resource_versions WHERE resource_type = $1) AS truth`, [type]);
    expect(rows[0].kept, type).toEqual(rows[0].truth);
  }
  const [last] = (await pool.query(`SELECT minute FROM ${s}.metric_pipeline_last_minute`)).rows;
  const [latest] = (await pool.query(`SELECT max(minute) AS minute FROM ${s}.pipeline_health`)).rows;
  expect(last).toEqual(latest);
}

/** Every scan node of resource_versions in an EXPLAIN ANALYZE (FORMAT JSON) plan: the rows it returned and the rows its filter removed. */
function versionScans(plan: Record<string, unknown>): { rows: number; removed: number }[] {
  const own = plan['Relation Name'] === 'resource_versions'
    ? [{ rows: Number(plan['Actual Rows']) * Number(plan['Actual Loops']), removed: Number(plan['Rows Removed by Filter'] ?? 0) + Number(plan['Rows Removed by Index Recheck'] ?? 0) }]
    : [];
  return [...own, ...((plan.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(versionScans)];
}

describe('pipeline_health: versions per minute counted at write time', () => {
  it('counts every version once by its minute of loaded_at, from writers appending at once', async () => {
    const schema = `${config.databaseSchema}_health_counts`;
    schemas.push(schema);
    await migrate(pool, { schema, log });
    await Promise.all([51, 52, 53, 54].map(async (seed) => {
      for (const statement of loads(seed)) await append(schema, statement);
    }));
    await compare(schema);

    // A statement rolled back counts nothing; a duplicate skipped by ON CONFLICT counts nothing.
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
      await client.query(INSERT(schema), params([{ id: 'gone', version: 1, loadedAt: '2025-08-01T10:03:00Z' }]));
      await client.query('ROLLBACK');
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
      await client.query(`${INSERT(schema)} ON CONFLICT DO NOTHING`, params([{ id: 'cu-51-0', version: 1, loadedAt: '2025-08-01T10:03:00Z' }, { id: 'new', version: 1, loadedAt: '2025-08-01T10:11:30Z' }]));
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    await compare(schema);
    // One writer at a time: its statement folded every committed row into one per minute.
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.version_load_deltas`)).rows).toEqual([{ n: 0 }]);
  });

  it('one writer does not wait for another\'s open transaction in the same minute', async () => {
    const schema = `${config.databaseSchema}_health_open`;
    schemas.push(schema);
    await migrate(pool, { schema, log });
    const open = await pool.connect();
    try {
      await open.query('BEGIN');
      await open.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
      await open.query(INSERT(schema), params([{ id: 'held', version: 1, loadedAt: '2025-08-01T10:00:10Z' }]));
      const other = await pool.connect();
      try {
        await other.query('BEGIN');
        await other.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
        await other.query(`SET LOCAL lock_timeout = '2s'`);
        await other.query(INSERT(schema), params([{ id: 'passing', version: 1, loadedAt: '2025-08-01T10:00:20Z' }]));
        await other.query('COMMIT');
      } finally {
        other.release();
      }
      // Only the committed version is counted while the other transaction is open.
      expect((await pool.query(`SELECT versions::int FROM ${quoteIdent(schema)}.pipeline_health`)).rows).toEqual([{ versions: 1 }]);
      await open.query('COMMIT');
    } finally {
      open.release();
    }
    await compare(schema);
  });

  it('the analyst role asks latest_loaded_at, and may not read the counts behind it', async () => {
    const schema = `${config.databaseSchema}_health_analyst`;
    schemas.push(schema);
    await migrate(pool, { schema, log });
    await append(schema, [{ id: 'one', version: 1, loadedAt: '2025-08-01T10:00:10Z' }]);
    await asAnalyst(pool, async (client) => {
      const { rows } = await client.query(`SELECT ${quoteIdent(schema)}.latest_loaded_at('Customer') AS at`);
      expect(rows).toEqual([{ at: new Date('2025-08-01T10:00:10Z') }]);
      await expect(client.query(`SELECT * FROM ${quoteIdent(schema)}.version_load_minutes`)).rejects.toMatchObject({ code: '42501' });
    });
  });

  it('a range of minutes reads the versions with source events only, however many others the range holds', async () => {
    const schema = `${config.databaseSchema}_health_sourced`;
    schemas.push(schema);
    await migrate(pool, { schema, log });
    const s = quoteIdent(schema);
    // A backfill: 3,000 versions without source events in the minute; two caused by webhooks.
    const webhooks = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
    await appendWebhooks(pool, schema, webhooks.map((id, i) => ({ id, event: 'CustomerChanged', at: `2025-08-01T10:00:0${i}Z`, payload: {} })));
    const backfill = Array.from({ length: 3000 }, (_, i): Loaded => ({ id: `b-${i}`, version: 1, loadedAt: `2025-08-01T10:00:${String(10 + (i % 40)).padStart(2, '0')}Z` }));
    for (let i = 0; i < backfill.length; i += 1000) await append(schema, backfill.slice(i, i + 1000));
    await append(schema, webhooks.map((id, i) => ({ id: `w-${i}`, version: 1, loadedAt: '2025-08-01T10:00:30Z', sources: [id] })));
    await pool.query(`ANALYZE ${s}.resource_versions`);

    const sql = `SELECT * FROM ${s}.pipeline_health WHERE minute >= '2025-08-01T09:00:00Z'`;
    expect((await pool.query(sql)).rows).toEqual([
      { minute: new Date('2025-08-01T10:00:00Z'), webhooks: '2', versions: '3002', freshness_p50_s: 29.5, freshness_p99_s: expect.closeTo(29.99, 6), dead_letters: '0' },
    ]);
    const { rows } = await pool.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`);
    const scans = versionScans(rows[0]['QUERY PLAN'][0].Plan);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) expect(scan.rows + scan.removed).toBeLessThanOrEqual(2);
  });

  it('a warehouse migrated with history in it gets its counts from the migration', async () => {
    // The release before the counts, then today's migrate.
    const schema = `${config.databaseSchema}_health_fill`;
    schemas.push(schema);
    await migrateAsRelease010(pool, schema, log);
    for (const statement of loads(61)) await append(schema, statement);
    await migrate(pool, { schema, log });
    await compare(schema);
    // And keeps them from there on.
    for (const statement of loads(62)) await append(schema, statement);
    await compare(schema);
  });
});
