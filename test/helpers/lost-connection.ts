import type pg from 'pg';
import { waitFor } from './wait-for.js';

/** What pg keeps of a client's socket (not in its types). */
interface ClientInternals {
  processID?: number;
  connection?: { stream?: { destroyed?: boolean } };
}

/**
 * For a test that ends a session with pg_terminate_backend (as a server shutdown or an
 * administrator does): records every uncaught exception and every client `pool` hands out from
 * now on, so that the test can wait until the ended session's socket has closed (pg emits a lost
 * connection's 'error' on the client as the socket ends; with no listener for it, that error is
 * uncaught and would end the process) and then read what was uncaught. `stop()` removes both
 * listeners.
 */
export function watchLostConnections(pool: pg.Pool) {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  const acquired: pg.PoolClient[] = [];
  const onAcquire = (client: pg.PoolClient) => acquired.push(client);
  process.prependListener('uncaughtException', onUncaught);
  pool.on('acquire', onAcquire);
  return {
    uncaught,
    /**
     * Waits until exactly one session waits for a lock that session `blockerPid` holds (so not
     * another test's), ends it with pg_terminate_backend, and returns its pid.
     */
    async endSessionBlockedBy(blockerPid: number, what: string): Promise<number> {
      const blocked = `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`;
      await waitFor(async () => (await pool.query(blocked, [blockerPid])).rows.length === 1, { timeoutMs: 20_000, what });
      const pid = (await pool.query<{ pid: number }>(blocked, [blockerPid])).rows[0]!.pid;
      await pool.query('SELECT pg_terminate_backend($1)', [pid]);
      return pid;
    },
    /** Resolves once the socket of the client whose session is `pid` has closed, and the events of that turn have run. */
    async socketClosed(pid: number): Promise<void> {
      const socket = () => (acquired.find((c) => (c as unknown as ClientInternals).processID === pid) as unknown as ClientInternals | undefined)?.connection?.stream;
      await waitFor(async () => socket()?.destroyed === true, { timeoutMs: 10_000, what: `the socket of session ${pid} closed` });
      await new Promise((resolve) => setImmediate(resolve));
    },
    stop(): void {
      pool.off('acquire', onAcquire);
      process.removeListener('uncaughtException', onUncaught);
    },
  };
}
