import type pg from 'pg';
import { ANALYST_ROLE, WRITER_ROLE } from '../../src/warehouse/resource-types.js';

/** Runs `write` in one transaction of the writer role (as the sink writes), committed, or rolled back on an error. */
export async function asWriter(pool: pg.Pool, write: (client: pg.PoolClient) => Promise<unknown>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
    await write(client);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Runs `read` in one transaction of the analyst role, rolled back whatever it did: what an analyst's login may see and do. */
export async function asAnalyst<T>(pool: pg.Pool, read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL ROLE ${ANALYST_ROLE}`);
    return await read(client);
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
}
