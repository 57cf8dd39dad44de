import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_TYPES } from '../../src/billing-api/resource-types.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { currentView, historyView } from '../../src/warehouse/resource-types.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const s = quoteIdent(config.databaseSchema);

beforeAll(async () => {
  await migrate(pool, { schema: config.databaseSchema, log });
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
});

const t = (iso: string) => new Date(iso);

async function insert(type: string, id: string, version: number, fetchedAt: string, body: object | null, events: string[] = []) {
  await pool.query(
    `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::uuid[], $9, $10, 0, $11)`,
    [type, id, version, fetchedAt, body === null, body, `h${version}`, events.map((_, i) => `00000000-0000-4000-8000-00000000000${i}`), events, type === 'Contract' ? 'cu-1' : null, version],
  );
}

describe('warehouse views (docs/CONTRACT.md section 5)', () => {
  it('every type has <t>_history and <t>_current with the public columns first, contracts also customer_id', async () => {
    const common = ['resource_id text', 'version integer', 'valid_from timestamp with time zone', 'valid_to timestamp with time zone', 'is_current boolean', 'deleted boolean', 'body jsonb', 'content_hash text', 'source_event_id uuid', 'source_event text'];
    const times = ['notified_at timestamp with time zone', 'loaded_at timestamp with time zone'];
    for (const type of RESOURCE_TYPES) {
      for (const view of [historyView(type), currentView(type)]) {
        const { rows } = await pool.query(`SELECT column_name || ' ' || data_type AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, [config.databaseSchema, view]);
        // The public columns first, in their order; the typed columns of the mapping follow (warehouse-analyst.test.ts).
        const first = type === 'Contract' ? [...common, 'customer_id text', ...times] : [...common, ...times];
        expect(rows.map((r) => r.c).slice(0, first.length), view).toEqual(first);
      }
    }
    const hooks = await pool.query(`SELECT column_name || ' ' || data_type AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'webhook_events' ORDER BY ordinal_position`, [config.databaseSchema]);
    expect(hooks.rows.map((r) => r.c)).toEqual(['event_id uuid', 'event text', 'received_at timestamp with time zone', 'payload jsonb', 'entity_id text', 'retry_count integer', 'kafka_partition integer', 'kafka_offset bigint']);
  });

  it('valid_to is the next version\'s valid_from, is_current marks the latest, and _current drops deleted resources', async () => {
    await insert('Customer', 'a', 1, '2025-01-01T00:00:00Z', { v: 1 }, ['CustomerCreated']);
    await insert('Customer', 'a', 2, '2025-01-05T00:00:00Z', { v: 2 }, ['CustomerChanged', 'CustomerLocked']);
    await insert('Customer', 'a', 3, '2025-01-09T00:00:00Z', { v: 3 });
    await insert('Customer', 'b', 1, '2025-01-02T00:00:00Z', { v: 1 });
    await insert('Customer', 'b', 2, '2025-01-03T00:00:00Z', null, ['CustomerDeleted']);
    await insert('Contract', 'a', 1, '2025-01-04T00:00:00Z', { v: 1 }); // same id, other type: its own history

    const history = await pool.query(`SELECT resource_id, version, valid_from, valid_to, is_current, deleted, source_event FROM ${s}.customer_history ORDER BY resource_id, version`);
    expect(history.rows).toEqual([
      { resource_id: 'a', version: 1, valid_from: t('2025-01-01T00:00:00Z'), valid_to: t('2025-01-05T00:00:00Z'), is_current: false, deleted: false, source_event: 'CustomerCreated' },
      { resource_id: 'a', version: 2, valid_from: t('2025-01-05T00:00:00Z'), valid_to: t('2025-01-09T00:00:00Z'), is_current: false, deleted: false, source_event: 'CustomerChanged' },
      { resource_id: 'a', version: 3, valid_from: t('2025-01-09T00:00:00Z'), valid_to: null, is_current: true, deleted: false, source_event: null },
      { resource_id: 'b', version: 1, valid_from: t('2025-01-02T00:00:00Z'), valid_to: t('2025-01-03T00:00:00Z'), is_current: false, deleted: false, source_event: null },
      { resource_id: 'b', version: 2, valid_from: t('2025-01-03T00:00:00Z'), valid_to: null, is_current: true, deleted: true, source_event: 'CustomerDeleted' },
    ]);
    // A filter on one resource must give the same valid_to as the full view (the filter is applied below the window).
    const one = await pool.query(`SELECT version, valid_to, is_current FROM ${s}.customer_history WHERE resource_id = 'a' AND version = 2`);
    expect(one.rows).toEqual([{ version: 2, valid_to: t('2025-01-09T00:00:00Z'), is_current: false }]);

    const current = await pool.query(`SELECT resource_id, version, valid_to, is_current, body FROM ${s}.customer_current ORDER BY resource_id`);
    expect(current.rows).toEqual([{ resource_id: 'a', version: 3, valid_to: null, is_current: true, body: { v: 3 } }]);

    // "As of" a date, through the history view.
    const asOf = await pool.query(
      `SELECT resource_id, version FROM ${s}.customer_history WHERE valid_from <= $1 AND (valid_to > $1 OR valid_to IS NULL) AND NOT deleted ORDER BY resource_id`,
      ['2025-01-02T12:00:00Z'],
    );
    expect(asOf.rows).toEqual([
      { resource_id: 'a', version: 1 },
      { resource_id: 'b', version: 1 },
    ]);

    const contracts = await pool.query(`SELECT resource_id, version, is_current, customer_id FROM ${s}.contract_current`);
    expect(contracts.rows).toEqual([{ resource_id: 'a', version: 1, is_current: true, customer_id: 'cu-1' }]);
  });

  it('one resource\'s history and its latest version are index scans of the primary key', async () => {
    // A handful of rows is read fastest by a sequential scan; turned off, the plan shows which
    // index serves the query (the shape it has at any size).
    const plan = async (sql: string) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SET LOCAL enable_seqscan = off');
        return (await client.query(`EXPLAIN ${sql}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    };
    await pool.query(`ANALYZE ${s}.resource_versions, ${s}.closed_version_facts, ${s}.current_facts, ${s}.webhook_events`);
    const history = await plan(`SELECT * FROM ${s}.customer_history WHERE resource_id = 'a'`);
    // version_facts is the closed versions and the latest ones: each part read by its key.
    expect(history).toMatch(/Index Scan using closed_version_facts_pkey on closed_version_facts .*\n\s+Index Cond: \(\(resource_type = 'Customer'::text\) AND \(resource_id = 'a'::text\)\)/);
    expect(history).toMatch(/Index Scan using current_facts_pkey on current_facts .*\n\s+Index Cond: \(\(resource_type = 'Customer'::text\) AND \(resource_id = 'a'::text\)\)/);
    expect(history).toMatch(/Index Scan using resource_versions_pkey on resource_versions r/);
    // valid_to and is_current are stored: no window over the type, no probe for the next version.
    expect(history).not.toMatch(/WindowAgg|Seq Scan|SubPlan [0-9]+\n.*Limit/);
    const current = await plan(`SELECT * FROM ${s}.customer_current WHERE resource_id = 'a'`);
    expect(current).toMatch(/Index Scan using current_facts_pkey on current_facts c .*\n\s+Index Cond: \(\(resource_type = 'Customer'::text\) AND \(resource_id = 'a'::text\)\)/);
    expect(current).not.toMatch(/version_facts/);
    expect(current).toMatch(/Index Scan using resource_versions_pkey on resource_versions r/);
    // A query that reads no column of resource_versions (body, lineage) does not read it at all.
    const typedOnly = await plan(`SELECT resource_id, valid_to, is_current FROM ${s}.customer_history WHERE resource_id = 'a'`);
    expect(typedOnly).not.toMatch(/resource_versions/);
    expect(current).not.toMatch(/Seq Scan|Unique|Sort/);
    // As of a recent moment: from the versions still open then (few), not all begun by then.
    const asOf = await plan(`SELECT count(*) FROM ${s}.customer_as_of('2025-01-09T12:00:00Z')`);
    expect(asOf).toMatch(/Index Only Scan using closed_version_facts_valid_to on closed_version_facts/);
  });

  it('<t>_as_of at infinity is the current state', async () => {
    const asOf = await pool.query(`SELECT resource_id, version FROM ${s}.customer_as_of('infinity') ORDER BY 1`);
    const current = await pool.query(`SELECT resource_id, version FROM ${s}.customer_current ORDER BY 1`);
    expect(asOf.rows).toEqual(current.rows);
    expect(asOf.rows.length).toBeGreaterThan(0);
  });
});
