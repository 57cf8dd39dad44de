import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { UserError } from '../errors.js';
import type { Logger } from '../log.js';
import { packageRoot } from '../package-root.js';
import type { Config } from '../config.js';
import { ensureDerivedObjectsTable, refreshDerivedObjects, type DerivedObjectsOutcome } from '../warehouse/migrate-derived.js';
import { loadMetricViewsSql } from '../warehouse/metric-views.js';
import { loadTypedColumns, mergeTypedColumns } from '../warehouse/typed-columns.js';
import { moveGrantsToSchemaRoles, type WarehouseRoles } from '../warehouse/schema-roles.js';
import { checksumMatches, migrationChecksum } from './migration-checksum.js';
import { DEFAULT_MIGRATE_LOCK_ATTEMPTS, DEFAULT_MIGRATE_LOCK_TIMEOUT_MS, lockedTransaction, type LockPolicy } from './migrate-transaction.js';
import { quoteIdent, withClient } from './pool.js';

export const migrationsDir = join(packageRoot, 'migrations');

export interface MigrateOptions extends Partial<LockPolicy> {
  /** Schema that receives the warehouse; the SQL files use unqualified names inside it. */
  schema: string;
  dir?: string;
  /** The packaged typed column mapping; default warehouse/typed-columns.json (a test gives an older release's). */
  typedColumnsFile?: string;
  /** The user's own typed columns (TYPED_COLUMNS_FILE), merged over the packaged mapping; default none. */
  userTypedColumnsFile?: string;
  /** The metric views; default warehouse/metric-views.sql (a test gives an older release's). */
  metricViewsFile?: string;
  /** Per-schema roles (DATABASE_ROLES=schema): the schema's grants move to them; default the cluster-wide roles. */
  roles?: WarehouseRoles;
  log: Logger;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
  /** Whether the analyst and metric views were re-created, or already matched their definitions. */
  derivedObjects: DerivedObjectsOutcome;
}

/** The settings of migrate's that come from the configuration (for `migrate` and `replay --rebuild`). */
export function migrateSettings(config: Config): Pick<MigrateOptions, 'userTypedColumnsFile' | 'lockTimeoutMs' | 'lockAttempts'> {
  return { userTypedColumnsFile: config.typedColumnsFile, lockTimeoutMs: config.migrateLockTimeoutMs, lockAttempts: config.migrateLockAttempts };
}

interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

async function readMigrations(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (name) => {
      const sql = await readFile(join(dir, name), 'utf8');
      return { name, sql, checksum: migrationChecksum(sql) };
    }),
  );
}

/**
 * Applies `migrations/NNNN_name.sql` in order, each in its own transaction with `search_path`
 * set to the target schema, recording each in `<schema>.schema_migrations`. Every transaction
 * takes the schema's transaction-level advisory lock and reads what is applied under it, so
 * concurrent runs wait for each other and apply each file once, and no lock outlives a
 * transaction (safe behind a transaction-pooling proxy). A file whose statements changed after
 * it was applied is refused (migrations are append-only; comments may be reworded).
 *
 * Then, in one more transaction under the same lock, the analyst views and functions (from the
 * packaged typed column mapping with the user's file merged over it) and the metric views
 * (warehouse/metric-views.sql) are applied when their definitions changed since the last run
 * (src/warehouse/migrate-derived.ts); with nothing changed, no view is touched.
 *
 * Every transaction waits at most `lockTimeoutMs` for each lock it needs and is retried up to
 * `lockAttempts` times with backoff (src/db/migrate-transaction.ts).
 *
 * With per-schema roles (`roles`), each of those transactions also moves the schema's grants from
 * the cluster-wide roles to the schema's own before it commits (nothing to move: nothing done).
 */
export async function migrate(pool: pg.Pool, options: MigrateOptions): Promise<MigrateResult> {
  const migrations = await readMigrations(options.dir ?? migrationsDir);
  const typed = options.userTypedColumnsFile === undefined
    ? await loadTypedColumns(options.typedColumnsFile)
    : mergeTypedColumns(await loadTypedColumns(options.typedColumnsFile), await loadTypedColumns(options.userTypedColumnsFile));
  const metrics = await loadMetricViewsSql(options.metricViewsFile);
  const schema = quoteIdent(options.schema);
  const policy: LockPolicy = {
    lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_MIGRATE_LOCK_TIMEOUT_MS,
    lockAttempts: options.lockAttempts ?? DEFAULT_MIGRATE_LOCK_ATTEMPTS,
    retryMinDelayMs: options.retryMinDelayMs,
    retryMaxDelayMs: options.retryMaxDelayMs,
  };
  return withClient(pool, async (client) => {
    const inLock = <T>(step: string, work: (c: pg.PoolClient) => Promise<T>): Promise<T> => lockedTransaction(client, { ...policy, schema: options.schema, step, log: options.log }, work);
    const applied: string[] = [];
    await inLock('bookkeeping', async (c) => {
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await c.query(`CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await ensureDerivedObjectsTable(c, options.schema);
    });
    for (;;) {
      const next = await inLock('migrations', async (c) => {
        const { rows } = await c.query<{ name: string; checksum: string }>(`SELECT name, checksum FROM ${schema}.schema_migrations`);
        const done = new Map(rows.map((r) => [r.name, r.checksum]));
        for (const m of migrations) {
          const recorded = done.get(m.name);
          if (recorded !== undefined && !checksumMatches(m.name, recorded, m.sql)) {
            throw new UserError(`migration ${m.name} was changed after it was applied to schema ${options.schema}; migrations are append-only: add a new file instead`);
          }
        }
        const m = migrations.find((x) => !done.has(x.name));
        if (m === undefined) return undefined;
        await c.query(`SET LOCAL search_path TO ${schema}, public`);
        await c.query(m.sql);
        if (options.roles) await moveGrantsToSchemaRoles(c, options.schema, options.roles);
        await c.query(`INSERT INTO ${schema}.schema_migrations (name, checksum) VALUES ($1, $2)`, [m.name, m.checksum]);
        return m.name;
      });
      if (next === undefined) break;
      options.log.info('migration applied', { migration: next, schema: options.schema });
      applied.push(next);
    }
    const derived = await inLock('views', async (c) => {
      await c.query(`SET LOCAL search_path TO ${schema}, public`);
      const refreshed = await refreshDerivedObjects(c, options.schema, typed, metrics, options.log);
      // Also when nothing changed: switching an existing schema to its own roles is one migrate.
      if (options.roles) await moveGrantsToSchemaRoles(c, options.schema, options.roles);
      return refreshed;
    });
    if (derived.outcome === 'recreated') {
      options.log.info('analyst views created', { schema: options.schema, changed: derived.changed, all: derived.all, factsReextracted: derived.factsReextracted });
    }
    return { applied, alreadyApplied: migrations.map((m) => m.name).filter((n) => !applied.includes(n)), derivedObjects: derived.outcome };
  });
}
