import type pg from 'pg';
import { createPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { ANALYST_ROLE } from '../warehouse/resource-types.js';

/**
 * A connection string whose sessions start as the analyst role (docs/WAREHOUSE.md, Roles) with
 * read-only transactions and UTC days:
 * PostgreSQL applies startup options before the first query, so there is no moment in which a
 * pooled connection holds the login's own rights (an owner's URL, as in the demo). Options the
 * URL already carries are kept, ours last so they win.
 */
export function analystConnectionString(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  const ours = `-c role=${ANALYST_ROLE} -c default_transaction_read_only=on -c TimeZone=UTC`;
  const theirs = url.searchParams.get('options');
  url.searchParams.set('options', theirs ? `${theirs} ${ours}` : ours);
  return url.toString();
}

/** The dashboard's pool: every connection reads as billing_loader_analyst, read-only. */
export function createAnalystPool(options: { databaseUrl: string; log: Logger; max?: number }): pg.Pool {
  return createPool({ databaseUrl: analystConnectionString(options.databaseUrl), applicationName: 'billing-loader dashboard', log: options.log, max: options.max ?? 4 });
}
