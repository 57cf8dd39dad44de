import { describe, expect, it } from 'vitest';
import { createAnalystPool } from '../../src/dashboard/analyst-pool.js';
import { silentLogger } from '../../src/log.js';
import { testConfig } from '../helpers/environment.js';

/**
 * The page sends its chart requests at once, and on a large warehouse each takes seconds: a
 * request waiting for one of the pool's connections must wait its turn, not fail after the few
 * seconds a connection takes to open.
 */
describe('the dashboard\'s pool', () => {
  it('queues a request behind slower ones instead of failing it', async () => {
    const pool = createAnalystPool({ databaseUrl: testConfig().databaseUrl, log: silentLogger, max: 1 });
    try {
      const slow = pool.query('SELECT pg_sleep(6)');
      const queued = pool.query<{ n: number }>('SELECT 1 AS n');
      await expect(queued).resolves.toMatchObject({ rows: [{ n: 1 }] });
      await slow;
    } finally {
      await pool.end();
    }
  }, 30_000);
});
