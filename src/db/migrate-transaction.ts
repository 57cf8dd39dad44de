import type pg from 'pg';
import { LoaderError, RetriesExhaustedError } from '../errors.js';
import type { Logger } from '../log.js';
import { retry } from '../retry.js';
import { inTransaction } from './pool.js';

/** MIGRATE_LOCK_TIMEOUT_MS's default: the longest a migrate statement queues new readers of a view behind it. */
export const DEFAULT_MIGRATE_LOCK_TIMEOUT_MS = 5000;
/** MIGRATE_LOCK_ATTEMPTS's default: with the backoff below, about two to three minutes of a long query before migrate gives up. */
export const DEFAULT_MIGRATE_LOCK_ATTEMPTS = 10;

export interface LockPolicy {
  /** Longest wait of one statement for a lock (`lock_timeout`), in milliseconds. */
  lockTimeoutMs: number;
  /** Attempts of a transaction whose lock wait timed out, the first included. */
  lockAttempts: number;
  /** First backoff between attempts, in milliseconds (full jitter, doubling). Default 1000. */
  retryMinDelayMs?: number;
  /** Backoff ceiling, in milliseconds. Default 30000. */
  retryMaxDelayMs?: number;
}

export interface LockedTransactionOptions extends LockPolicy {
  /** The schema migrated: its advisory lock key, and named in the log and errors. */
  schema: string;
  /** What the transaction does, for the log (`migrations`, `views`). */
  step: string;
  log: Logger;
}

/** SQLSTATE lock_not_available: the statement waited longer than lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

const isLockTimeout = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === LOCK_NOT_AVAILABLE;

/** The advisory lock key of a schema's migrations (the same key earlier releases' session lock used). */
export const migrateLockKey = (schema: string): string => `billing-loader.migrate:${schema}`;

/**
 * The head of a statement, for a log line: its first line that is not a comment, up to ` AS `
 * (a view's or function's body), noting when more statements follow (the metric views' file).
 */
export function statementHead(sql: string): string {
  const lines = sql.split('\n').map((l) => l.trim());
  const first = lines.find((l) => l !== '' && !l.startsWith('--')) ?? '';
  const head = first.replace(/\s+AS(\s.*)?$/i, '').replace(/\s*\(.*$/, '').slice(0, 120);
  const more = /;\s*\S/.test(sql.replace(/--.*$/gm, '').trim().replace(/;\s*$/, ''));
  return more ? `${head} (and the statements after it)` : head;
}

/**
 * Runs `work` in one transaction on `client` under the schema's migration lock, and retries it
 * when one of its statements waited longer than the lock timeout for a lock.
 *
 * The lock is `pg_advisory_xact_lock`: it goes with the transaction's end, commit or rollback,
 * so nothing is left on the server connection for its next user (a session lock taken through
 * PgBouncer in transaction mode stays with a server connection that then serves others:
 * https://github.com/flyway/flyway/issues/2895). Waiting for it holds no other lock, so a
 * concurrent migrate just waits; it is taken before `lock_timeout` is set for that reason.
 *
 * Every other lock the transaction takes waits at most `lockTimeoutMs` (`SET LOCAL
 * lock_timeout`). A statement waiting for an ACCESS EXCLUSIVE lock on a view queues every new
 * reader of that view behind it; the timeout bounds that queue, the rollback lets them through,
 * and the transaction is tried again after a backoff, with a log line per retry. When the
 * attempts run out, it fails with one line naming the statement and the settings.
 */
export async function lockedTransaction<T>(client: pg.PoolClient, options: LockedTransactionOptions, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let last = '';
  const tracked = new Proxy(client, {
    get(target, prop) {
      if (prop === 'query') {
        return (text: unknown, ...rest: unknown[]) => {
          last = typeof text === 'string' ? text : String((text as { text?: unknown } | null)?.text ?? '');
          return (target.query as (...args: unknown[]) => unknown)(text, ...rest);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  const attempt = (): Promise<T> =>
    inTransaction(client, async () => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [migrateLockKey(options.schema)]);
      await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${options.lockTimeoutMs}ms`]);
      last = '';
      return work(tracked);
    });
  try {
    return await retry(attempt, {
      attempts: options.lockAttempts,
      minDelayMs: options.retryMinDelayMs ?? 1000,
      maxDelayMs: options.retryMaxDelayMs ?? 30_000,
      shouldRetry: isLockTimeout,
      onRetry: (_err, attemptNo, delayMs) =>
        options.log.warn('migrate lock timeout, retrying', {
          schema: options.schema, step: options.step, waitingOn: statementHead(last), attempt: attemptNo, of: options.lockAttempts, lockTimeoutMs: options.lockTimeoutMs, retryInMs: delayMs,
        }),
    });
  } catch (err) {
    const cause = err instanceof RetriesExhaustedError ? err.cause : err;
    if (!isLockTimeout(cause)) throw err instanceof RetriesExhaustedError ? cause : err;
    throw new LoaderError(
      `migrate gave up after ${options.lockAttempts} attempts on schema ${options.schema}: ${statementHead(last)} waited longer than MIGRATE_LOCK_TIMEOUT_MS (${options.lockTimeoutMs} ms) each time for a lock that a long query or an open transaction holds (see pg_stat_activity); nothing was changed by that step: run migrate again once it has ended, or raise MIGRATE_LOCK_ATTEMPTS`,
      { cause, retriable: true, context: { sqlState: LOCK_NOT_AVAILABLE } },
    );
  }
}
