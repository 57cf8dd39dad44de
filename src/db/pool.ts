import pg from 'pg';
import { isConnectionLost } from '../errors.js';
import type { Logger } from '../log.js';

export interface PoolOptions {
  databaseUrl: string;
  /** Connections at most. Default 10. */
  max?: number;
  /** Name shown in pg_stat_activity. */
  applicationName: string;
  /**
   * How long a query may wait for a connection (to open one, or for one to be free when all `max`
   * are busy) before it fails. Default 5000.
   */
  connectionTimeoutMs?: number;
  log: Logger;
}

/** The one place a PostgreSQL pool is built. */
export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.max ?? 10,
    application_name: options.applicationName,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (server restart) must not crash the process;
  // the pool discards it and the next query opens a new one.
  pool.on('error', (err) => options.log.warn('idle database connection lost', { err }));
  return pool;
}

/** Quotes an SQL identifier (schema, table). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Runs `work` on a client checked out of `pool`, then gives the client back. While a client is
 * checked out, pg emits 'error' on it when the server ends its connection (a shutdown, a
 * terminated session) besides failing the query in flight; with no listener that event is
 * thrown out of the socket's handler and ends the process. Here it is listened to, and a client
 * whose connection is gone (that event, or an error of SQLSTATE class 08 or 57 or a dropped
 * socket) is destroyed rather than handed out again. What `work` throws is thrown as it is.
 */
export async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  try {
    return await work(client);
  } catch (err) {
    if (isConnectionLost(err)) broken ??= err instanceof Error ? err : new Error(String(err));
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/**
 * Runs `work` in one transaction on `client`: `begin` (BEGIN, or BEGIN with an isolation level),
 * then COMMIT; on any error ROLLBACK (its own failure ignored: a lost connection rolls back by
 * itself) and the error thrown as it is.
 */
export async function inTransaction<T>(client: pg.ClientBase, work: () => Promise<T>, begin = 'BEGIN'): Promise<T> {
  await client.query(begin);
  try {
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
