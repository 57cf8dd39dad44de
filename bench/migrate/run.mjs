#!/usr/bin/env node
// Migrate benchmark (not a test): `npm run --silent build && node bench/migrate/run.mjs` (needs
// PostgreSQL: DATABASE_URL, else the local stack's). Plain ESM over the compiled dist/.
//
// Two figures about how migrate shares the database:
//   no-op:   on a migrated schema, BENCH_RUNS (default 7) runs of migrate with nothing new: their
//            time, and the ACCESS EXCLUSIVE locks on views its transactions hold at each COMMIT;
//   readers: a transaction that read contract_history stays open (a long BI query) while migrate
//            applies a changed view with MIGRATE_LOCK_TIMEOUT_MS (default here 1000); a new query
//            on contract_history every 100 ms for BENCH_SECONDS (default 15): the longest and median
//            wait, migrate's retries, and how long after the long transaction ended migrate finished.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = (path) => import(join(root, 'dist', path));
const { configWithLocalStack } = await dist('cli/cli-config.js');
const { migrate } = await dist('db/migrate.js');
const { createPool, quoteIdent } = await dist('db/pool.js');
const { silentLogger } = await dist('log.js');

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const LOCK_TIMEOUT_MS = Number(process.env.MIGRATE_LOCK_TIMEOUT_MS ?? 1000);

const config = configWithLocalStack(process.env);
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'bench migrate', log: silentLogger, max: 4 });
const schema = `bench_migrate_${randomBytes(3).toString('hex')}`;
const s = quoteIdent(schema);
const dir = await mkdtemp(join(tmpdir(), 'bench-migrate-'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A pool whose client counts, at each COMMIT, the ACCESS EXCLUSIVE locks on views its transaction holds. */
function counting(locks) {
  return {
    connect: async () => {
      const client = await pool.connect();
      return new Proxy(client, {
        get(target, prop) {
          if (prop === 'query') {
            return async (text, ...rest) => {
              if (text === 'COMMIT') {
                const { rows } = await target.query(`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE l.pid = pg_backend_pid() AND l.mode = 'AccessExclusiveLock' AND c.relkind = 'v'`);
                locks.push(rows[0].n);
              }
              return target.query(text, ...rest);
            };
          }
          const value = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    },
  };
}

try {
  await migrate(pool, { schema, log: silentLogger });
  const times = [];
  let locks = [];
  for (let i = 0; i < RUNS; i++) {
    locks = [];
    const t0 = performance.now();
    await migrate(counting(locks), { schema, log: silentLogger });
    times.push(performance.now() - t0);
  }
  console.log(`no-op: ${RUNS} runs, median ${median(times).toFixed(0)} ms (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)}); ACCESS EXCLUSIVE view locks held at each COMMIT of the last run: ${JSON.stringify(locks)}`);

  const file = join(dir, 'typed-columns.json');
  await writeFile(file, JSON.stringify({ Contract: [{ column: 'reference_code_copy', key: 'ReferenceCode', type: 'text' }] }));
  const holder = await pool.connect();
  await holder.query('BEGIN');
  await holder.query(`SELECT * FROM ${s}.contract_history LIMIT 0`);
  let retries = 0;
  const log = { ...silentLogger, warn: () => void retries++, child: () => log };
  const migrating = migrate(pool, { schema, log, userTypedColumnsFile: file, lockTimeoutMs: LOCK_TIMEOUT_MS, lockAttempts: 1000 });
  const waits = [];
  for (const until = Date.now() + SECONDS * 1000; Date.now() < until; ) {
    const t0 = performance.now();
    await pool.query(`SELECT count(*) FROM ${s}.contract_history`);
    waits.push(performance.now() - t0);
    await sleep(100);
  }
  await holder.query('COMMIT');
  holder.release();
  const ended = performance.now();
  const result = await migrating;
  console.log(`readers: ${waits.length} queries on contract_history in ${SECONDS} s beside a long transaction, migrate applying a changed view (lock timeout ${LOCK_TIMEOUT_MS} ms): longest wait ${Math.max(...waits).toFixed(0)} ms, median ${median(waits).toFixed(0)} ms, ${waits.filter((w) => w > 100).length} over 100 ms; migrate retried ${retries} times, views ${result.derivedObjects} ${(performance.now() - ended).toFixed(0)} ms after the long transaction ended (its backoff)`);
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
  await rm(dir, { recursive: true, force: true });
}
