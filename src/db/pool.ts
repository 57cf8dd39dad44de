import pg from 'pg';
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
