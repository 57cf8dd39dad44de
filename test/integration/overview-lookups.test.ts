import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { refreshMetrics } from '../../src/warehouse/metric-refresh.js';
import { appendVersions, type AppendedVersion } from '../helpers/append-versions.js';
import { testConfig } from '../helpers/environment.js';

/**
 * The overviews read for one contract or one customer reach the tables by key
 * (warehouse/metric-views.sql, "Business dates"; docs/WAREHOUSE.md, "Cost"): the rows they touch
 * in the tables that hold a row per customer, contract, span or version are those of the one
 * customer and its contracts, not every customer's. What the plan touched is read from EXPLAIN
 * ANALYZE (rows returned and rows a filter dropped, per scan of those tables), on a warehouse of
 * its own: thousands of customers, some deleted, and of contracts, some naming a customer never
 * read (on a few dozen rows the planner rightly reads a table whole rather than by key), refreshed
 * and analysed, so that no contract or customer is listed (the listed ones are computed whole at
 * each read, a cost of the list, not of the lookup).
 */
const log = createLogger('error');

/** Tables with a row per customer, contract, span or version: a lookup of one row reads few of theirs. */
const KEYED_TABLES = new Set(['current_facts', 'version_facts', 'resource_versions', 'metric_contract_cache', 'metric_segment_cache', 'metric_customer_cache']);

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Per table of KEYED_TABLES, the rows the plan's scans of it returned or dropped, over all their loops. */
function rowsTouched(node: PlanNode, into = new Map<string, number>()): Map<string, number> {
  const table = node['Relation Name'];
  if (table !== undefined && KEYED_TABLES.has(table)) {
    const rows = (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0);
    into.set(table, (into.get(table) ?? 0) + rows * (node['Actual Loops'] ?? 0));
  }
  for (const child of node.Plans ?? []) rowsTouched(child, into);
  return into;
}

const CUSTOMERS = 2000;
const CONTRACTS = 3000;
/** Customers the contracts name: the last hundred are never read. */
const NAMED = 2100;

/** cu-0 .. cu-1999, each changed once; every tenth deleted afterwards. */
function customers(): AppendedVersion[] {
  const out: AppendedVersion[] = [];
  for (let k = 0; k < CUSTOMERS; k++) {
    const created = new Date(Date.UTC(2025, 0, 1) + k * 3_600_000).toISOString();
    const body = (n: number) => ({ Id: `cu-${k}`, CreatedAt: created, FirstName: `First${k}`, LastName: `Last${k}-${n}`, EmailAddress: `c${k}@example.com`, Address: { Country: 'DE' } });
    out.push({ type: 'Customer', id: `cu-${k}`, version: 1, at: '2025-06-01T00:00:00Z', body: body(0) });
    out.push({ type: 'Customer', id: `cu-${k}`, version: 2, at: '2025-07-01T00:00:00Z', body: body(1) });
    if (k % 10 === 0) out.push({ type: 'Customer', id: `cu-${k}`, version: 3, at: '2025-08-01T00:00:00Z', body: null });
  }
  return out;
}

/** r-0 .. r-2999 for cu-(i mod NAMED). */
function contracts(): AppendedVersion[] {
  return Array.from({ length: CONTRACTS }, (_, i) => {
    const start = new Date(Date.UTC(2025, 1, 1) + i * 3_600_000).toISOString();
    return {
      type: 'Contract',
      id: `r-${i}`,
      version: 1,
      at: '2025-09-01T00:00:00Z',
      body: { Id: `r-${i}`, CustomerId: `cu-${i % NAMED}`, PlanId: 'plan-1', Currency: 'EUR', StartDate: start, LifecycleStatus: 'Active', Phases: [{ Type: 'Normal', StartDate: start, PlanId: 'plan-1' }] },
    };
  });
}

describe('the overviews of one contract or customer', () => {
  const config = testConfig();
  const schema = `overview_lookups_${process.pid}_${Date.now() % 100000}`;
  let pool: pg.Pool;
  beforeAll(async () => {
    pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
    await migrate(pool, { schema, log });
    const versions = [...customers(), ...contracts()];
    for (let i = 0; i < versions.length; i += 2000) await appendVersions(pool, schema, versions.slice(i, i + 2000));
    await refreshMetrics(pool, schema);
    const s = quoteIdent(schema);
    await pool.query(`ANALYZE ${s}.current_facts, ${s}.version_facts, ${s}.resource_versions, ${s}.metric_contracts_dirty, ${s}.metric_customers_dirty, ${s}.metric_payments_dirty`);
    await pool.query(`ANALYZE ${s}.metric_contract_cache, ${s}.metric_segment_cache, ${s}.metric_customer_cache`);
  }, 120_000);
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await pool.end();
  });

  /** The rows touched per keyed table by `sql` with `params`, and the rows it answered. */
  async function touched(sql: string, params: unknown[]): Promise<{ tables: Map<string, number>; rows: number }> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      const plan = rows[0]!['QUERY PLAN'][0].Plan;
      return { tables: rowsTouched(plan), rows: plan['Actual Rows'] ?? 0 };
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  it('the warehouse has what the lookups must not read whole: many customers and contracts, none listed', async () => {
    const s = quoteIdent(schema);
    const { rows } = await pool.query<{ customers: number; contracts: number; deleted: number; unread: number; listed: number }>(
      `SELECT (SELECT count(*)::int FROM ${s}.customer_overview) AS customers, (SELECT count(*)::int FROM ${s}.subscription_overview) AS contracts,
              (SELECT count(*)::int FROM ${s}.customer_overview WHERE deleted) AS deleted, (SELECT count(*)::int FROM ${s}.customer_overview WHERE NOT read) AS unread,
              (SELECT count(*)::int FROM ${s}.metric_contracts_dirty) + (SELECT count(*)::int FROM ${s}.metric_customers_dirty) AS listed`,
    );
    expect(rows[0]).toEqual({ customers: NAMED, contracts: CONTRACTS, deleted: CUSTOMERS / 10, unread: NAMED - CUSTOMERS, listed: 0 });
  });

  // A customer with two contracts, a deleted one with two, one never read with one.
  for (const customer of ['cu-3', 'cu-10', 'cu-2062']) {
    it(`customer_overview reads the rows of one customer (${customer}) and its contracts, not every customer's`, async () => {
      const got = await touched('SELECT * FROM customer_overview WHERE customer_id = $1', [customer]);
      expect(got.rows).toBe(1);
      // Each keyed table: the customer's rows or its contracts' rows, each read a few times (the
      // customer's kept row, its deletion lookup, the contracts' kept rows and spans).
      for (const [table, n] of got.tables) expect(n, table).toBeLessThanOrEqual(12);
    });
  }

  for (const contract of ['r-3', 'r-10', 'r-2062']) {
    it(`subscription_overview reads the rows of one contract (${contract}) and its customer, not every customer's`, async () => {
      const got = await touched('SELECT * FROM subscription_overview WHERE contract_id = $1', [contract]);
      expect(got.rows).toBe(1);
      for (const [table, n] of got.tables) expect(n, table).toBeLessThanOrEqual(8);
    });
  }
});
