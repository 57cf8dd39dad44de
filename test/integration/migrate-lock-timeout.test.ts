import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { watchLostConnections } from '../helpers/lost-connection.js';

const config = testConfig();
const schema = config.databaseSchema;
const s = quoteIdent(schema);
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log: silentLogger });
let dir: string;

interface Line {
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that keeps its lines, to read what migrate reported. */
function recordingLogger(lines: Line[]): Logger {
  const log: Logger = {
    debug: () => {},
    info: (msg, fields) => lines.push({ msg, fields: fields ?? {} }),
    warn: (msg, fields) => lines.push({ msg, fields: fields ?? {} }),
    error: (msg, fields) => lines.push({ msg, fields: fields ?? {} }),
    child: () => log,
  };
  return log;
}

/** A user's typed columns file adding one contract column (ReferenceCode: docs/WAREHOUSE.md, typed columns). */
async function userColumns(column: string): Promise<string> {
  const file = join(dir, `${column}.json`);
  await writeFile(file, JSON.stringify({ Contract: [{ column, key: 'ReferenceCode', type: 'text' }] }));
  return file;
}

/**
 * A BI session in the middle of a long transaction that has read every view of the warehouse:
 * it holds AccessShareLock on each of them (and the tables under them) until it ends.
 */
async function longReader(except: readonly string[] = []): Promise<pg.PoolClient> {
  const client = await pool.connect();
  await client.query('BEGIN');
  const { rows } = await client.query<{ name: string }>(`SELECT viewname AS name FROM pg_views WHERE schemaname = $1 AND viewname <> ALL ($2)`, [schema, except]);
  expect(rows.length).toBeGreaterThan(20);
  for (const { name } of rows) await client.query(`SELECT * FROM ${s}.${quoteIdent(name)} LIMIT 0`);
  return client;
}

/** `views` and every view of the schema that reads one of them, however indirectly. */
async function withReaders(views: readonly string[]): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `WITH RECURSIVE dep(oid) AS (
       SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = ANY ($2)
       UNION
       SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN dep ON d.refobjid = dep.oid
        WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class <> d.refobjid)
     SELECT c.relname AS name FROM dep JOIN pg_class c ON c.oid = dep.oid`,
    [schema, views],
  );
  return rows.map((r) => r.name);
}

async function contractColumns(): Promise<string[]> {
  const { rows } = await pool.query<{ c: string }>(`SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'contract_history'`, [schema]);
  return rows.map((r) => r.c);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'migrate-lock-'));
  await migrate(pool, { schema, log: silentLogger });
});

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await rm(dir, { recursive: true, force: true });
  await pool.end();
});

describe('migrate beside long queries on the views', () => {
  it('with nothing changed, completes while a long query holds every view, taking no lock that would wait', async () => {
    const reader = await longReader();
    try {
      // One attempt under a short lock timeout: a lock conflicting with the reader's would fail it.
      const result = await migrate(pool, { schema, log: silentLogger, lockTimeoutMs: 100, lockAttempts: 1 });
      expect(result.applied).toEqual([]);
      expect(result.derivedObjects).toBe('unchanged');
    } finally {
      await reader.query('ROLLBACK');
      reader.release();
    }
  });

  it('with a changed view, times out, retries, lets new readers through meanwhile, and succeeds once the long query ends', async () => {
    const file = await userColumns('reference_code_copy');
    const lines: Line[] = [];
    const reader = await longReader();
    let settled = false;
    const migrating = migrate(pool, { schema, log: recordingLogger(lines), userTypedColumnsFile: file, lockTimeoutMs: 200, lockAttempts: 10_000, retryMinDelayMs: 20, retryMaxDelayMs: 200 });
    void migrating.then(
      () => (settled = true),
      () => (settled = true),
    );
    try {
      await waitFor(() => lines.filter((l) => l.msg === 'migrate lock timeout, retrying').length >= 2, { what: 'two retries' });
      // A reader arriving now is not queued behind migrate's lock request until the long query ends.
      for (const view of ['contract_history', 'contract_current', 'subscription_movements']) {
        const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${s}.${quoteIdent(view)}`);
        expect(rows, view).toEqual([{ n: 0 }]);
      }
      expect(settled).toBe(false);
    } finally {
      await reader.query('COMMIT');
      reader.release();
    }
    const result = await migrating;
    expect(result.derivedObjects).toBe('recreated');
    expect(await contractColumns()).toContain('reference_code_copy');
    const retry = lines.find((l) => l.msg === 'migrate lock timeout, retrying')!;
    expect(retry.fields).toMatchObject({ schema, attempt: 1, lockTimeoutMs: 200 });
    expect(String(retry.fields.waitingOn)).toMatch(/VIEW|FUNCTION/);
    // Applied once, nothing is left to do.
    expect((await migrate(pool, { schema, log: silentLogger, userTypedColumnsFile: file })).derivedObjects).toBe('unchanged');
  });

  it('gives up after the configured attempts with one line naming the settings, and changes nothing', async () => {
    const file = await userColumns('reference_code_again');
    const reader = await longReader();
    try {
      const err = (await migrate(pool, { schema, log: silentLogger, userTypedColumnsFile: file, lockTimeoutMs: 100, lockAttempts: 2, retryMinDelayMs: 10, retryMaxDelayMs: 20 }).catch((e: unknown) => e)) as Error;
      expect(err).toBeInstanceOf(Error);
      expect(err.message).toMatch(/gave up after 2 attempts/);
      expect(err.message).toMatch(/MIGRATE_LOCK_TIMEOUT_MS/);
      expect(err.message).not.toContain('\n');

      // The command: exit 1, the same one line, and a log line per retry.
      const cli = await runCli(['migrate'], {
        DATABASE_URL: config.databaseUrl, DATABASE_SCHEMA: schema, TYPED_COLUMNS_FILE: file, MIGRATE_LOCK_TIMEOUT_MS: '100', MIGRATE_LOCK_ATTEMPTS: '2', LOG_LEVEL: 'info',
      });
      expect(cli.code).toBe(1);
      const stderr = cli.stderr.trim().split('\n');
      expect(stderr.at(-1)).toMatch(/^billing-loader: .*gave up after 2 attempts.*MIGRATE_LOCK_TIMEOUT_MS/);
      expect(stderr.filter((l) => l.includes('migrate lock timeout, retrying'))).toHaveLength(1);
    } finally {
      await reader.query('ROLLBACK');
      reader.release();
    }
    expect(await contractColumns()).not.toContain('reference_code_again');
  });

  it('a typed column added for one type replaces only that type\'s views: a long query on every view that does not read them does not hold it up', async () => {
    const file = join(dir, 'customer.json');
    await writeFile(file, JSON.stringify({
      Contract: [{ column: 'reference_code_copy', key: 'ReferenceCode', type: 'text' }],
      Customer: [{ column: 'address_raw', key: 'Address', type: 'jsonb' }],
    }));
    // Every view but the two that gain the column, typed_column_errors (it lists every typed
    // column), and the views that read any of them: a query on one of those holds a lock on the
    // view it reads too, which no migration can replace under it.
    const reader = await longReader(await withReaders(['customer_history', 'customer_current', 'typed_column_errors']));
    try {
      const lines: Line[] = [];
      const result = await migrate(pool, { schema, log: recordingLogger(lines), userTypedColumnsFile: file, lockTimeoutMs: 100, lockAttempts: 1 });
      expect(result.derivedObjects).toBe('recreated');
      expect(lines.find((l) => l.msg === 'analyst views created')?.fields).toMatchObject({
        all: false,
        changed: ['function customer_as_of', 'view customer_current', 'view customer_history', 'view typed_column_errors'],
      });
    } finally {
      await reader.query('ROLLBACK');
      reader.release();
    }
    const { rows } = await pool.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'customer_current' AND column_name = 'address_raw'`, [schema]);
    expect(rows).toHaveLength(1);
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${s}.customer_as_of('infinity')`)).rows).toEqual([{ n: 0 }]);
  });

  it('a migrate whose connection the server ends fails with the error, the process goes on, and the next one completes', async () => {
    // The server ends a session's connection when it shuts down (or an administrator ends it):
    // pg then emits 'error' on the client, and a checked-out client with no listener for it
    // throws that error out of the socket's handler, which would end the process.
    const file = await userColumns('reference_code_lost');
    const lost = watchLostConnections(pool);
    const reader = await longReader();
    try {
      const readerPid = (await reader.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const migrating = migrate(pool, { schema, log: silentLogger, userTypedColumnsFile: file, lockTimeoutMs: 60_000, lockAttempts: 1 }).then(
        () => ({ code: 'none' }),
        (err: unknown) => err as { code?: string },
      );
      // Migrate's session, waiting behind the reader's locks.
      const migratePid = await lost.endSessionBlockedBy(readerPid, 'migrate waiting for the reader');
      expect(await migrating).toMatchObject({ code: '57P01' });
      // The connection's end comes after the query's error.
      await lost.socketClosed(migratePid);
    } finally {
      lost.stop();
      await reader.query('ROLLBACK');
      reader.release();
    }
    expect(lost.uncaught).toEqual([]);
    expect(await contractColumns()).not.toContain('reference_code_lost');
    // The pool hands out working connections, and the next migrate does the work.
    expect((await migrate(pool, { schema, log: silentLogger, userTypedColumnsFile: file })).derivedObjects).toBe('recreated');
    expect(await contractColumns()).toContain('reference_code_lost');
  });
});
