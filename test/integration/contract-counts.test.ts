import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { WRITER_ROLE } from '../../src/warehouse/resource-types.js';
import { appendVersions, type AppendedVersion } from '../helpers/append-versions.js';
import { asAnalyst } from '../helpers/as-role.js';
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

/**
 * Seeded histories of 40 contracts over ten days: statuses and plans that change, letter cases
 * that change, a plan that is a number, deletions and re-creations, versions at any hour and
 * some exactly at midnight; shuffled and cut into statements of 1 to 9 rows, so that late records
 * land below their head and a statement carries several days.
 */
function histories(seed: number): AppendedVersion[] {
  let state = seed;
  const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const statuses = ['Active', 'InTrial', 'Ended', 'active'];
  const versions: AppendedVersion[] = [];
  for (let c = 0; c < 40; c++) {
    let at = Date.UTC(2025, 2, 1) + Math.floor(random() * 2 * 86_400_000);
    const n = 1 + Math.floor(random() * 6);
    for (let v = 1; v <= n; v++) {
      const plan = random() < 0.1 ? 7 : `p-${Math.floor(random() * 3)}`;
      const status = statuses[Math.floor(random() * statuses.length)]!;
      const body = random() < 0.15 ? null : random() < 0.3 ? { lifecycleStatus: status, planId: plan } : { LifecycleStatus: status, PlanId: plan };
      versions.push({ type: 'Contract', id: `c-${seed}-${c}`, version: v, at: new Date(at).toISOString(), body });
      at += random() < 0.2 ? 86_400_000 - (at % 86_400_000) : Math.floor(random() * 2 * 86_400_000);
    }
  }
  for (let i = versions.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [versions[i], versions[j]] = [versions[j]!, versions[i]!];
  }
  return versions;
}

async function load(schema: string, seed: number): Promise<void> {
  const versions = histories(seed);
  let state = seed + 99;
  const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < versions.length; ) {
    const n = 1 + Math.floor(random() * 9);
    await appendVersions(pool, schema, versions.slice(i, i + n), Math.floor(random() * 3));
    i += n;
  }
}

/** Moments to compare at: midnights, a version's own instant, an instant just before, hours in between, and far ends. */
const MOMENTS = [
  '-infinity', '2025-02-28T12:00:00Z', '2025-03-01T00:00:00Z', '2025-03-01T13:30:00Z', '2025-03-02T00:00:00Z', '2025-03-02T23:59:59.999999Z',
  '2025-03-03T07:00:00Z', '2025-03-04T00:00:00Z', '2025-03-05T18:45:00Z', '2025-03-07T00:00:00Z', '2025-03-09T11:11:11Z', '2025-03-20T00:00:00Z', 'infinity',
];

async function compare(schema: string, moments: readonly string[]): Promise<void> {
  const s = quoteIdent(schema);
  for (const at of moments) {
    const counted = await pool.query(`SELECT status, plan_id, contracts::int FROM ${s}.contract_counts_as_of($1) ORDER BY 1, 2`, [at]);
    const truth = await pool.query(`SELECT status, plan_id, count(*)::int AS contracts FROM ${s}.contract_as_of($1) GROUP BY 1, 2 ORDER BY 1, 2`, [at]);
    expect(counted.rows, at).toEqual(truth.rows);
  }
}

describe('contract_counts_as_of: contracts by status and plan at a moment, from counts kept at write time', () => {
  it('equals counting contract_as_of, at midnights, at a version\'s own instant and in between, whatever order the versions arrived in', async () => {
    const schema = `${config.databaseSchema}_counts`;
    schemas.push(schema);
    await migrate(pool, { schema, log });
    for (const seed of [11, 12, 13]) await load(schema, seed);
    const { rows } = await pool.query<{ at: Date }>(`SELECT fetched_at AS at FROM ${quoteIdent(schema)}.resource_versions ORDER BY random() LIMIT 12`);
    const instants = rows.flatMap((r) => [r.at.toISOString(), new Date(r.at.getTime() - 1).toISOString()]);
    const total = await pool.query(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.contract_counts_as_of('2025-03-04T00:00:00Z')`);
    expect(total.rows[0].n).toBeGreaterThan(5);
    await compare(schema, [...MOMENTS, ...instants]);
    // One writer at a time: every statement folded what was recorded, its own rows included.
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.contract_state_deltas`)).rows).toEqual([{ n: 0 }]);
  });

  it('writers appending at once lose no count, and one does not wait for another\'s open transaction', async () => {
    const schema = `${config.databaseSchema}_counts_concurrent`;
    schemas.push(schema);
    await migrate(pool, { schema, log });
    await Promise.all([41, 42, 43, 44].map((seed) => load(schema, seed)));
    await compare(schema, MOMENTS);

    // A transaction that appended (and so holds the fold) stays open; another appends on the
    // same day, status and plan under a 2-second lock timeout, and commits.
    const open = await pool.connect();
    try {
      await open.query('BEGIN');
      await open.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
      const insert = `INSERT INTO ${quoteIdent(schema)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset)
                      VALUES ('Contract', $1, 1, '2025-03-03T10:00:00Z', false, '{"LifecycleStatus":"Active","PlanId":"p-0"}', 'h', '{}', '{}', 0, 0)`;
      await open.query(insert, ['held']);
      const other = await pool.connect();
      try {
        await other.query('BEGIN');
        await other.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
        await other.query(`SET LOCAL lock_timeout = '2s'`);
        await other.query(insert, ['passing']);
        await other.query('COMMIT');
      } finally {
        other.release();
      }
      await open.query('COMMIT');
    } finally {
      open.release();
    }
    await compare(schema, MOMENTS);
  });

  it('the analyst role may call it, and may not read the tables it sums', async () => {
    const schema = `${config.databaseSchema}_counts_role`;
    schemas.push(schema);
    await migrate(pool, { schema, log });
    await load(schema, 21);
    await asAnalyst(pool, async (client) => {
      const { rows } = await client.query(`SELECT sum(contracts)::int AS n FROM ${quoteIdent(schema)}.contract_counts_as_of('infinity')`);
      expect(rows[0].n).toBeGreaterThan(0);
      await expect(client.query(`SELECT * FROM ${quoteIdent(schema)}.contract_state_days`)).rejects.toMatchObject({ code: '42501' });
    });
  });

  it('a warehouse migrated with history in it gets its counts from the migration', async () => {
    // The release before the counts, then today's migrate.
    const schema = `${config.databaseSchema}_counts_fill`;
    schemas.push(schema);
    await migrateAsRelease010(pool, schema, log);
    await load(schema, 31);
    await migrate(pool, { schema, log });
    await compare(schema, MOMENTS);
    // And keeps them from there on.
    await load(schema, 32);
    await compare(schema, MOMENTS);
  });
});
