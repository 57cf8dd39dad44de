import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { UserError } from '../errors.js';
import type { Logger } from '../log.js';
import { packageRoot } from '../package-root.js';
import { createAnalystObjects } from '../warehouse/analyst-views.js';
import { createMetricViews, dropMetricViews, loadMetricViewsSql } from '../warehouse/metric-views.js';
import { loadTypedColumns } from '../warehouse/typed-columns.js';
import { refreshVersionFacts } from '../warehouse/version-facts.js';
import { checksumMatches, migrationChecksum } from './migration-checksum.js';
import { quoteIdent } from './pool.js';

export const migrationsDir = join(packageRoot, 'migrations');

export interface MigrateOptions {
  /** Schema that receives the warehouse; the SQL files use unqualified names inside it. */
  schema: string;
  dir?: string;
  /** The typed column mapping of the analyst views; default warehouse/typed-columns.json. */
  typedColumnsFile?: string;
  /** The metric views; default warehouse/metric-views.sql (a test gives an older release's). */
  metricViewsFile?: string;
  log: Logger;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
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
 * set to the target schema, recording each in `<schema>.schema_migrations`. A transaction-level
 * advisory lock per schema makes concurrent runs wait for each other instead of racing; a file
 * whose statements changed after it was applied is refused (migrations are append-only; comments
 * may be reworded).
 *
 * Then, in one more transaction under the same lock, the analyst views and functions are
 * recreated from the typed column mapping: they are derived, not history, so every run may
 * replace them, and a user extends the mapping by editing it and migrating again. The metric views
 * (warehouse/metric-views.sql) read those views: they are dropped before and created after them
 * in the same transaction, so a mapping change never fails on them and never leaves them missing.
 * The fields version_facts stores follow the mapping too: when its key list changed, they are
 * re-extracted from the bodies in that transaction (src/warehouse/version-facts.ts).
 */
export async function migrate(pool: pg.Pool, options: MigrateOptions): Promise<MigrateResult> {
  const migrations = await readMigrations(options.dir ?? migrationsDir);
  const schema = quoteIdent(options.schema);
  const client = await pool.connect();
  const result: MigrateResult = { applied: [], alreadyApplied: [] };
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`billing-loader.migrate:${options.schema}`]);
    try {
      // Concurrent CREATE SCHEMA IF NOT EXISTS can still collide on the catalog; the lock above serialises it.
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const { rows } = await client.query<{ name: string; checksum: string }>(`SELECT name, checksum FROM ${schema}.schema_migrations`);
      const done = new Map(rows.map((r) => [r.name, r.checksum]));
      for (const m of migrations) {
        const applied = done.get(m.name);
        if (applied !== undefined) {
          if (!checksumMatches(m.name, applied, m.sql)) {
            throw new UserError(`migration ${m.name} was changed after it was applied to schema ${options.schema}; migrations are append-only: add a new file instead`);
          }
          result.alreadyApplied.push(m.name);
          continue;
        }
        await client.query('BEGIN');
        try {
          await client.query(`SET LOCAL search_path TO ${schema}, public`);
          await client.query(m.sql);
          await client.query(`INSERT INTO ${schema}.schema_migrations (name, checksum) VALUES ($1, $2)`, [m.name, m.checksum]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        }
        options.log.info('migration applied', { migration: m.name, schema: options.schema });
        result.applied.push(m.name);
      }
      const typed = await loadTypedColumns(options.typedColumnsFile);
      const metrics = await loadMetricViewsSql(options.metricViewsFile);
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL search_path TO ${schema}, public`);
        await dropMetricViews(client, options.schema, metrics.views, metrics.functions);
        const reextracted = await refreshVersionFacts(client, options.schema, typed, options.log);
        const objects = await createAnalystObjects(client, options.schema, typed);
        await createMetricViews(client, options.schema, metrics);
        await client.query('COMMIT');
        options.log.info('analyst views created', { schema: options.schema, views: objects.views.length, functions: objects.functions.length, metricViews: metrics.views.length, factsReextracted: reextracted });
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`billing-loader.migrate:${options.schema}`]);
    }
  } finally {
    client.release();
  }
  return result;
}
