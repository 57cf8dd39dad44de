import { isRetriable, isRetriableSqlState } from '../errors.js';

/**
 * How the sink treats a PostgreSQL failure. Only `data` errors (SQLSTATE classes 22 and 23: a
 * value the database refuses) are the record's fault and may send a record to the DLQ; every
 * other failure (server down or restarting, connection lost, a missing table because migrations
 * were not run, a permission missing) is retried with backoff, because DLQ-ing good records for
 * an outage would lose them from the warehouse (docs/CONTRACT.md property 7).
 */
export type DatabaseFailure = 'transient' | 'data' | 'blocked';

export function classifyDatabaseError(err: unknown): DatabaseFailure {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    if (isRetriableSqlState(code)) return 'transient';
    if (code.startsWith('22') || code.startsWith('23')) return 'data';
    return 'blocked';
  }
  if (isRetriable(err)) return 'transient';
  // node-postgres reports a dropped socket with a plain Error and no code.
  const message = err instanceof Error ? err.message : String(err);
  if (/connection terminated|not queryable|connection timeout|timeout exceeded when trying to connect|Connection ended|ECONNREFUSED|ECONNRESET/i.test(message)) return 'transient';
  return 'blocked';
}
