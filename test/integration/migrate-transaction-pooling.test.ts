import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsDir } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';

const config = testConfig();
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log: silentLogger, max: 12 });
const schemas: string[] = [];
let dir: string;
let userFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'migrate-pooling-'));
  userFile = join(dir, 'typed-columns.json');
  await writeFile(userFile, JSON.stringify({ Contract: [{ column: 'reference_code_copy', key: 'ReferenceCode', type: 'text' }] }));
});

afterAll(async () => {
  for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await rm(dir, { recursive: true, force: true });
  await pool.end();
});

function newSchema(): string {
  const schema = `test_${uniqueSuffix()}_pooled`;
  schemas.push(schema);
  return schema;
}

/**
 * What a client sees behind PgBouncer in transaction mode: each transaction (a statement outside
 * BEGIN ... COMMIT is one of its own) runs on whichever server connection is free, here the two
 * alternately, and session state does not follow the client. When a transaction ends, before
 * the server connection could go to another client, it records the advisory locks that
 * connection still holds: a session-level lock would stay with it.
 */
async function transactionPooled(): Promise<{ pool: pg.Pool; leftovers: string[]; close: () => Promise<void> }> {
  const servers = [await pool.connect(), await pool.connect()];
  const pids = await Promise.all(servers.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
  const leftovers: string[] = [];
  let turn = 0;
  let current: number | undefined;
  let open = false;
  const client = {
    async query(text: string, values?: unknown[]) {
      current ??= turn++ % servers.length;
      const server = current;
      if (/^\s*BEGIN\b/i.test(text)) open = true;
      try {
        return await servers[server]!.query(text, values);
      } finally {
        if (/^\s*(COMMIT|ROLLBACK)\s*$/i.test(text)) open = false;
        if (!open) {
          current = undefined;
          const held = await pool.query<{ objid: string }>(`SELECT objid::text FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1`, [pids[server]]);
          for (const r of held.rows) leftovers.push(`${text.slice(0, 60)}: advisory lock ${r.objid} still held`);
        }
      }
    },
    release() {},
    // The pooler's clients report no connection events of their own (the servers behind are the pool's).
    on() {},
    off() {},
  };
  return {
    pool: { connect: async () => client } as unknown as pg.Pool,
    leftovers,
    close: async () => {
      for (const c of servers) c.release();
    },
  };
}

describe('migrate behind a transaction-pooling proxy', () => {
  it('holds its lock only inside its transactions: none is left on a server connection when one ends', async () => {
    const schema = newSchema();
    const pooled = await transactionPooled();
    try {
      const first = await migrate(pooled.pool, { schema, log: silentLogger });
      expect(first.applied).toEqual((await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort());
      expect(pooled.leftovers).toEqual([]);
      expect((await migrate(pooled.pool, { schema, log: silentLogger, userTypedColumnsFile: userFile })).derivedObjects).toBe('recreated');
      expect((await migrate(pooled.pool, { schema, log: silentLogger, userTypedColumnsFile: userFile })).derivedObjects).toBe('unchanged');
      expect(pooled.leftovers).toEqual([]);
    } finally {
      await pooled.close();
    }
  });

  it('two concurrent migrates through it apply each file once, and one of them re-creates the views', async () => {
    const schema = newSchema();
    const [a, b] = [await transactionPooled(), await transactionPooled()];
    try {
      const results = await Promise.all([a, b].map((p) => migrate(p.pool, { schema, log: silentLogger })));
      const files = (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();
      expect(results.flatMap((r) => r.applied).sort()).toEqual(files);
      expect(results.map((r) => r.derivedObjects).sort()).toEqual(['recreated', 'unchanged']);

      // A changed mapping, from two at once: applied by one, found current by the other.
      const again = await Promise.all([a, b].map((p) => migrate(p.pool, { schema, log: silentLogger, userTypedColumnsFile: userFile })));
      expect(again.map((r) => r.derivedObjects).sort()).toEqual(['recreated', 'unchanged']);
      expect([...a.leftovers, ...b.leftovers]).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
