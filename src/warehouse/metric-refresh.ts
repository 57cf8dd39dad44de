import type pg from 'pg';
import { inTransaction, quoteIdent, withClient } from '../db/pool.js';

/** What one refresh did, and how many are still listed. */
export interface MetricRefreshResult {
  /** The contracts (for their own rows or their escalation episodes), payment transactions, plan variants, customers and dunnings whose kept rows it computed again. */
  refreshed: number;
  /** Entries of the lists (PENDING_LISTS) made after the refresh's snapshot (written meanwhile): the next refresh's work. */
  pending: number;
}

/** The lists of what is appended and not refreshed yet: contracts, payment transactions, customers, plan variants, escalation episodes' contracts, dunnings. */
const PENDING_LISTS = ['metric_contracts_dirty', 'metric_payments_dirty', 'metric_customers_dirty', 'metric_variants_dirty', 'metric_episodes_dirty', 'metric_dunnings_dirty'];

/** SQLSTATE of a refresh that ran beside another one (metric_cache_state's row): run it again. */
export const SERIALIZATION_FAILURE = '40001';

/**
 * Computes again the kept rows of the metric views for the contracts listed since the last
 * refresh (warehouse/metric-views.sql, "Answers kept at write time"), in one REPEATABLE READ
 * transaction: the listed contracts' rows, contract_daily's per-day sums and the list itself
 * change together, from one snapshot. Every view answers the same before and after; after, it
 * reads the kept rows instead of computing the listed contracts' from their versions.
 * Returns undefined when the schema has no metric_refresh() (metric views of an earlier release).
 * A concurrent refresh makes this one fail with SQLSTATE 40001: the caller runs it again.
 */
export async function refreshMetrics(pool: pg.Pool, schema: string): Promise<MetricRefreshResult | undefined> {
  return withClient(pool, async (client) => {
    const { rows: found } = await client.query<{ fn: string | null }>('SELECT to_regprocedure($1) AS fn', [`${quoteIdent(schema)}.metric_refresh()`]);
    if (!found[0]?.fn) return undefined;
    const { rows } = await inTransaction(
      client,
      async () => {
        await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
        return client.query<{ refreshed: string }>('SELECT metric_refresh() AS refreshed');
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ',
    );
    // Every list the refresh works off (warehouse/metric-views.sql), as one count.
    const pending = await client.query<{ n: string }>(
      `SELECT ${PENDING_LISTS.map((t) => `(SELECT count(*) FROM ${quoteIdent(schema)}.${t})`).join(' + ')} AS n`,
    );
    return { refreshed: Number(rows[0]?.refreshed ?? 0), pending: Number(pending.rows[0]?.n ?? 0) };
  });
}
