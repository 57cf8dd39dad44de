import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, webhook, type SinkHarness } from './sink-harness.js';
import { freePort } from '../helpers/free-port.js';

/**
 * SIGTERM ends the process within SHUTDOWN_TIMEOUT_MS even when its drain hangs: here the sink's
 * batch in flight waits on a table lock the test holds, so its stop never finishes by itself.
 * Runs the built CLI (`npm run build`; `npm test` builds first).
 */
let h: SinkHarness;
const children: ChildProcess[] = [];
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await h?.close();
});

describe('shutdown deadline', () => {
  it('exits non-zero at SHUTDOWN_TIMEOUT_MS when a stage does not finish stopping', async () => {
    const c = h.config;
    const locker = await h.pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE ${h.table('webhook_events')} IN ACCESS EXCLUSIVE MODE`);
      const child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'sink'], {
        cwd: packageRoot,
        env: {
          ...process.env,
          KAFKA_BROKERS: c.kafkaBrokers.join(','),
          SCHEMA_REGISTRY_URL: c.schemaRegistryUrl,
          DATABASE_URL: c.databaseUrl,
          DATABASE_SCHEMA: c.databaseSchema,
          TOPIC_PREFIX: c.topicPrefix,
          SINK_PORT: String(await freePort()),
          SHUTDOWN_TIMEOUT_MS: '1500',
          // No metric refresh: its statement names no schema, so its session could not be told apart below.
          SINK_METRICS_REFRESH_MS: '0',
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      children.push(child);
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      await h.produceWebhooks([webhook('CustomerChanged', { CustomerId: 'c-1' })]);
      await waitFor(
        async () => {
          const { rows } = await h.pool.query<{ n: string }>(`SELECT count(*) n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%webhook_events%'`, [c.databaseSchema]);
          return Number(rows[0]?.n) > 0;
        },
        { what: "the sink's write waits on the lock", timeoutMs: 60_000, intervalMs: 200 },
      );
      child.kill('SIGTERM');
      expect(await exited).toBe(1);
      expect(stderr).toMatch(/"timeoutMs":1500[^\n]*"msg":"shutdown timeout exceeded, exiting"/);
      expect(stderr).not.toContain('"msg":"stopped"');
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
      // The killed sink's sessions outlive it on the server: the one waiting on the lock goes on
      // with its statement once the lock is gone (the webhook insert and its listing trigger),
      // and only then finds its client gone. Dropping the schema meanwhile deadlocks with it.
      await waitFor(
        async () => {
          const { rows } = await h.pool.query<{ n: string }>(
            `SELECT count(*) n FROM pg_stat_activity WHERE application_name = 'billing-loader sink' AND state <> 'idle' AND query LIKE '%' || $1 || '%'`,
            [c.databaseSchema],
          );
          return Number(rows[0]?.n) === 0;
        },
        { what: "the killed sink's sessions have ended", timeoutMs: 60_000, intervalMs: 100 },
      );
    }
  }, 120_000);
});
