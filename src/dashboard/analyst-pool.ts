import type pg from 'pg';
import { createPool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { SHARED_ROLES } from '../warehouse/schema-roles.js';

/**
 * A connection string whose sessions start as the analyst role (docs/WAREHOUSE.md, Roles) with
 * read-only transactions and UTC days:
 * PostgreSQL applies startup options before the first query, so there is no moment in which a
 * pooled connection holds the login's own rights (an owner's URL, as in the demo). Options the
 * URL already carries are kept, ours last so they win; but for work_mem, which the URL may set.
 *
 * work_mem 64MB: the metric views sort a row per episode or per dunning version, and at a
 * million versions the dunning levels' sort spills to disk at PostgreSQL's default 4MB; 64MB keeps
 * every metric view's sorts in memory there (docs/ARCHITECTURE.md, "The dashboard reads as the analyst").
 */
export const DASHBOARD_WORK_MEM = '64MB';

export function analystConnectionString(databaseUrl: string, analystRole: string = SHARED_ROLES.analyst): string {
  const url = new URL(databaseUrl);
  const ours = `-c role=${analystRole} -c default_transaction_read_only=on -c TimeZone=UTC`;
  const theirs = url.searchParams.get('options');
  url.searchParams.set('options', [`-c work_mem=${DASHBOARD_WORK_MEM}`, theirs, ours].filter(Boolean).join(' '));
  return url.toString();
}

/**
 * The dashboard's pool: every connection reads as the analyst role (DATABASE_ROLES), read-only. Eight
 * connections: the page's first load sends seven chart requests at once (revenue and the six
 * operations ones), beside a timeline or customer search and the readiness check. A request that
 * finds them all busy waits its turn for up to a minute: on a
 * large warehouse the metric views take seconds each, and a chart that arrives late is better than
 * one that fails after the default five seconds.
 */
export function createAnalystPool(options: { databaseUrl: string; analystRole?: string; log: Logger; max?: number }): pg.Pool {
  return createPool({
    databaseUrl: analystConnectionString(options.databaseUrl, options.analystRole),
    applicationName: 'billing-loader dashboard',
    log: options.log,
    max: options.max ?? 8,
    connectionTimeoutMs: 60_000,
  });
}
