import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { migrate, migrationsDir, type MigrateOptions } from '../../src/db/migrate.js';
import type { Logger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';

/**
 * Migrates `schema` as release 0.1.0 left it: the SQL files before 0012 with that release's typed
 * columns and metric views (test/fixtures/release-0.1.0), so that a test can fill it with history
 * and then run today's migrate on it.
 */
export async function migrateAsRelease010(pool: pg.Pool, schema: string, log: Logger): Promise<void> {
  const release = join(packageRoot, 'test', 'fixtures', 'release-0.1.0');
  await migrateBefore(pool, schema, log, '0012', { typedColumnsFile: join(release, 'typed-columns.json'), metricViewsFile: join(release, 'metric-views.sql') });
}

/**
 * Migrates `schema` with today's SQL files that come before `first` (a file name prefix such as
 * '0025'): the warehouse as it was before that migration, to fill with history and then migrate.
 */
export async function migrateBefore(pool: pg.Pool, schema: string, log: Logger, first: string, options: Pick<MigrateOptions, 'typedColumnsFile' | 'metricViewsFile'> = {}): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  try {
    for (const name of await readdir(migrationsDir)) if (name < first) await cp(join(migrationsDir, name), join(dir, name));
    await migrate(pool, { schema, log, dir, ...options });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
