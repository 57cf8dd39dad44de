import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { scenarioWarehouse } from '../helpers/scenario-warehouse.js';

/**
 * The overviews read for one contract or one customer reach the tables by key
 * (warehouse/metric-views.sql, "Business dates"; docs/WAREHOUSE.md, "Cost"): the rows they touch
 * in the tables that hold a row per customer, contract or version are those of the one customer
 * and its contracts, not every customer's. What the plan touched is read from EXPLAIN ANALYZE
 * (rows returned and rows a filter dropped, per scan of those tables), on the scenario warehouse.
 * Sequential scans are turned off: on the scenario's small tables the planner would rather read a
 * table whole than use an index, which on a large warehouse it does not; a definition that must
 * compute every customer's rows reads them whole either way.
 */
const log = createLogger('error');

/** Tables with a row per customer, contract, span or version: a lookup of one row reads few of theirs. */
const KEYED_TABLES = new Set(['current_facts', 'version_facts', 'resource_versions', 'metric_contract_cache', 'metric_segment_cache']);

interface PlanNode {
  'Node Type': string;
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
    const loops = node['Actual Loops'] ?? 0;
    const rows = (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0);
    into.set(table, (into.get(table) ?? 0) + rows * loops);
  }
  for (const child of node.Plans ?? []) rowsTouched(child, into);
  return into;
}

describe('the overviews of one contract or customer', () => {
  let pool: pg.Pool;
  let schema: string;
  beforeAll(async () => {
    const scenario = await scenarioWarehouse();
    pool = createPool({ databaseUrl: scenario.databaseUrl, applicationName: 'test', log });
    schema = scenario.schema;
  }, 300_000);
  afterAll(async () => {
    await pool?.end();
  });

  /** The rows touched per keyed table by `sql` with `params`, and the rows it answered. */
  async function touched(sql: string, params: unknown[]): Promise<{ tables: Map<string, number>; rows: number }> {
    const client = await pool.connect();
    try {
      // The listed contracts' rows are computed from their versions at each read, a cost that
      // grows with the list, not with the lookup: refreshed first (rolled back with the rest), so
      // that the lookup reads kept rows only, whatever the sink has listed and not yet refreshed.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
      await client.query('SELECT metric_refresh()');
      await client.query('SET LOCAL enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      const plan = rows[0]!['QUERY PLAN'][0].Plan;
      return { tables: rowsTouched(plan), rows: plan['Actual Rows'] ?? 0 };
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  interface Picked { customer_id: string; contract_id: string; contracts: number; customers: number; all_contracts: number }
  /** A customer with the most contracts and one of its contracts, and how many customers and contracts the warehouse has. */
  async function pick(): Promise<Picked> {
    const s = quoteIdent(schema);
    const { rows } = await pool.query<Picked>(
      `SELECT o.customer_id, (SELECT min(contract_id) FROM ${s}.subscription_overview WHERE customer_id = o.customer_id) AS contract_id, o.contracts::int,
              (SELECT count(*)::int FROM ${s}.customer_overview) AS customers, (SELECT count(*)::int FROM ${s}.subscription_overview) AS all_contracts
         FROM ${s}.customer_overview o ORDER BY o.contracts DESC, o.customer_id LIMIT 1`,
    );
    const p = rows[0]!;
    // Not vacuous: reading every customer or contract would touch many times the one's rows.
    expect(p.customers).toBeGreaterThan(50);
    expect(p.all_contracts).toBeGreaterThan(50);
    expect(p.contracts).toBeGreaterThan(0);
    return p;
  }

  it('customer_overview reads the one customer\'s row and its contracts\' rows, not every customer\'s', async () => {
    const p = await pick();
    const customer = await touched('SELECT * FROM customer_overview WHERE customer_id = $1', [p.customer_id]);
    expect(customer.rows).toBe(1);
    // Each keyed table: the customer's rows or its contracts' rows, each read a few times (the
    // customer's current row, its deletion lookup, the contracts' kept rows and spans).
    for (const [table, n] of customer.tables) expect(n, table).toBeLessThanOrEqual(4 * (p.contracts + 1));
  });

  it('subscription_overview reads the one contract\'s rows and its customer\'s, not every customer\'s', async () => {
    const p = await pick();
    const contract = await touched('SELECT * FROM subscription_overview WHERE contract_id = $1', [p.contract_id]);
    expect(contract.rows).toBe(1);
    for (const [table, n] of contract.tables) expect(n, table).toBeLessThanOrEqual(8);
  });
});
