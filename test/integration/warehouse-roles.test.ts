import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_TYPES } from '../../src/billing-api/resource-types.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { asOfFunction, changesView } from '../../src/warehouse/analyst-views.js';
import { loadMetricViewsSql } from '../../src/warehouse/metric-views.js';
import { ANALYST_ROLE, WRITER_ROLE, currentView, historyView } from '../../src/warehouse/resource-types.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';

const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const s = quoteIdent(config.databaseSchema);
const others = [`test_${uniqueSuffix()}`, `test_${uniqueSuffix()}`];

beforeAll(async () => {
  // Three schemas migrated at once: the cluster-wide roles are created once, without a race.
  await Promise.all([config.databaseSchema, ...others].map((schema) => migrate(pool, { schema, log })));
});
afterAll(async () => {
  for (const schema of [config.databaseSchema, ...others]) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await pool.end();
});

/** Runs `fn` as `role` inside a transaction that is rolled back. */
async function as<T>(role: string, fn: (q: (sql: string) => Promise<unknown>) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL ROLE ${role}`);
    let n = 0;
    // Each statement under a savepoint, so an expected failure does not end the transaction.
    const q = async (sql: string) => {
      const sp = `s${n++}`;
      await client.query(`SAVEPOINT ${sp}`);
      try {
        const result = await client.query(sql);
        await client.query(`RELEASE SAVEPOINT ${sp}`);
        return result.rows;
      } catch (err) {
        await client.query(`ROLLBACK TO SAVEPOINT ${sp}`);
        throw err;
      }
    };
    return await fn(q);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

describe('warehouse roles', () => {
  it('both roles exist, cannot log in, and are shared by every schema', async () => {
    const { rows } = await pool.query(`SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname`, [[ANALYST_ROLE, WRITER_ROLE]]);
    expect(rows).toEqual([
      { rolname: ANALYST_ROLE, rolcanlogin: false },
      { rolname: WRITER_ROLE, rolcanlogin: false },
    ]);
  });

  it('the analyst reads every view and webhook_events, and can write no history', async () => {
    await pool.query(
      `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset)
       VALUES ('Contract', 'c-1', 1, now(), false, '{"CustomerId":"cu"}', 'h', '{}', '{}', 'cu', 0, 0)`,
    );
    await as(ANALYST_ROLE, async (q) => {
      for (const type of RESOURCE_TYPES) {
        await q(`SELECT * FROM ${s}.${quoteIdent(historyView(type))}`);
        await q(`SELECT * FROM ${s}.${quoteIdent(currentView(type))}`);
      }
      expect(await q(`SELECT resource_id, customer_id FROM ${s}.contract_current`)).toEqual([{ resource_id: 'c-1', customer_id: 'cu' }]);
      await q(`SELECT * FROM ${s}.webhook_events`);
      const denied = { code: '42501' };
      await expect(q(`SELECT * FROM ${s}.resource_versions`)).rejects.toMatchObject(denied);
      await expect(q(`INSERT INTO ${s}.webhook_events VALUES (gen_random_uuid(), 'X', now(), '{}')`)).rejects.toMatchObject(denied);
      await expect(
        q(`INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset) VALUES ('Order','o',1,now(),true,null,'deleted','{}','{}',0,0)`),
      ).rejects.toMatchObject(denied);
      // The views are not updatable anyway (window, DISTINCT ON); the analyst also holds no write privilege on them.
      await expect(q(`UPDATE ${s}.contract_history SET content_hash = 'x'`)).rejects.toThrow();
      await expect(q(`DELETE FROM ${s}.contract_current`)).rejects.toThrow();
      for (const type of RESOURCE_TYPES) {
        for (const view of [historyView(type), currentView(type)]) {
          const [row] = (await q(
            `SELECT has_table_privilege('${ANALYST_ROLE}', '${s}.${quoteIdent(view)}', 'SELECT') AS r, has_table_privilege('${ANALYST_ROLE}', '${s}.${quoteIdent(view)}', 'INSERT,UPDATE,DELETE,TRUNCATE') AS w`,
          )) as { r: boolean; w: boolean }[];
          expect(row, view).toEqual({ r: true, w: false });
        }
      }
      await expect(q(`CREATE TABLE ${s}.mine (x int)`)).rejects.toMatchObject(denied);
      await expect(q(`INSERT INTO ${s}.dead_letters (dlq_topic, dlq_partition, dlq_offset, stage, error_class, error_message, source_topic, source_partition, source_offset, failed_at) VALUES ('d', 0, 0, 'sink', 'decode', '', 's', 0, 0, now())`)).rejects.toMatchObject(denied);
    });
  });

  it('the analyst reads every view and <t>_as_of function of the analyst layer, no table but webhook_events and dead_letters, and writes only fx_rates', async () => {
    const views = await pool.query<{ name: string }>(`SELECT table_name AS name FROM information_schema.views WHERE table_schema = $1 ORDER BY 1`, [config.databaseSchema]);
    const metricViews = (await loadMetricViewsSql()).views;
    const expected = ['resource_latest', 'typed_column_errors', ...RESOURCE_TYPES.flatMap((t) => [historyView(t), currentView(t), changesView(t)]), ...metricViews].sort();
    // resource_heads and version_facts: the writer's views of current_facts and of every version's facts, not the analyst's.
    expect(views.rows.map((r) => r.name)).toEqual([...expected, 'resource_heads', 'version_facts'].sort());
    const tables = await pool.query<{ name: string }>(`SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p') ORDER BY 1`, [config.databaseSchema]);
    // The metric rows kept at write time (metric_*: warehouse/metric-views.sql) are read through the metric views only.
    const kept = [
      'metric_cache_state', 'metric_contract_cache', 'metric_contracts_dirty', 'metric_customer_cache', 'metric_customers_dirty', 'metric_daily_cache', 'metric_dunning_cache',
      'metric_dunning_match_cache', 'metric_dunning_notice_cache', 'metric_dunnings_dirty', 'metric_episode_sources_pending', 'metric_episodes_dirty', 'metric_escalation_cover', 'metric_escalation_episode_cache',
      'metric_escalation_event_cache', 'metric_movement_cache', 'metric_movement_day_cache', 'metric_mrr_customer_cache', 'metric_mrr_month_cache', 'metric_mrr_span_cache', 'metric_payment_cache', 'metric_payments_dirty',
      'metric_segment_cache', 'metric_unread_customer_cache', 'metric_variants_dirty',
    ];
    expect(tables.rows.map((r) => r.name)).toEqual(
      ['closed_version_facts', 'contract_state_days', 'contract_state_deltas', 'current_facts', 'dead_letters', 'fx_rates', ...kept, 'resource_versions', 'schema_derived_objects', 'schema_migrations', 'version_facts_keys', 'version_load_deltas', 'version_load_minutes', 'webhook_events'],
    );
    await as(ANALYST_ROLE, async (q) => {
      for (const v of expected) await q(`SELECT * FROM ${s}.${quoteIdent(v)} LIMIT 1`);
      for (const type of RESOURCE_TYPES) await q(`SELECT * FROM ${s}.${quoteIdent(asOfFunction(type))}(now())`);
      expect(await q(`SELECT resource_id, customer_id FROM ${s}.contract_as_of(now())`)).toEqual([{ resource_id: 'c-1', customer_id: 'cu' }]);
      await q(`SELECT * FROM ${s}.contract_counts_as_of(now())`);
      await q(`SELECT * FROM ${s}.dead_letters`);
      // fx_rates is the analyst's own reference data (the MRR views' exchange rates): it keeps it.
      await q(`INSERT INTO ${s}.fx_rates VALUES ('EUR', '2025-01-01', 1)`);
      await q(`DELETE FROM ${s}.fx_rates`);
      const denied = { code: '42501' };
      for (const table of ['closed_version_facts', 'contract_state_days', 'contract_state_deltas', 'current_facts', 'resource_heads', 'resource_versions', 'schema_derived_objects', 'schema_migrations', 'version_facts', 'version_facts_keys', 'version_load_deltas', 'version_load_minutes', ...kept]) {
        await expect(q(`SELECT * FROM ${s}.${table}`), table).rejects.toMatchObject(denied);
      }
      await expect(q(`INSERT INTO ${s}.resource_heads VALUES ('Contract', 'x', 1, now(), false)`)).rejects.toMatchObject(denied);
      for (const v of expected) {
        const [row] = (await q(`SELECT has_table_privilege('${ANALYST_ROLE}', '${s}.${quoteIdent(v)}', 'INSERT,UPDATE,DELETE,TRUNCATE') AS w`)) as { w: boolean }[];
        expect(row, v).toEqual({ w: false });
      }
    });
  });

  it('the writer appends to both tables, and its appends move the heads behind <t>_current', async () => {
    await as(WRITER_ROLE, async (q) => {
      // The sink records dead letters as the writer: it appends, and changes nothing it wrote.
      await q(`INSERT INTO ${s}.dead_letters (dlq_topic, dlq_partition, dlq_offset, stage, error_class, error_message, source_topic, source_partition, source_offset, failed_at) VALUES ('w', 0, 0, 'sink', 'decode', '', 's', 0, 0, now()) ON CONFLICT DO NOTHING`);
      await expect(q(`DELETE FROM ${s}.dead_letters`)).rejects.toMatchObject({ code: '42501' });
      await q(`INSERT INTO ${s}.webhook_events VALUES (gen_random_uuid(), 'X', now(), '{}')`);
      await q(
        `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset) VALUES ('Order','o',1,now(),true,null,'deleted','{}','{}',0,0)`,
      );
      expect(await q(`SELECT count(*)::int AS n FROM ${s}.resource_versions WHERE resource_type = 'Order'`)).toEqual([{ n: 1 }]);
      expect(await q(`SELECT resource_id, version, deleted FROM ${s}.resource_latest WHERE resource_type = 'Order'`)).toEqual([{ resource_id: 'o', version: 1, deleted: true }]);
    });
  });
});
