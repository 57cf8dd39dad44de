import type { Command } from 'commander';
import { migrate, migrateSettings } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { createLogger } from '../log.js';
import { environmentHelp } from './env-help.js';
import { cliConfig } from './cli-config.js';
import { migrateDatabaseUrl } from '../config.js';
import { warehouseRoles } from '../warehouse/schema-roles.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('apply the SQL files in migrations/ in order, then the analyst and metric views whose definitions changed (TYPED_COLUMNS_FILE merged over the packaged typed columns), as the owner login (MIGRATE_DATABASE_URL, else DATABASE_URL); each lock waits at most MIGRATE_LOCK_TIMEOUT_MS, then the step is retried (MIGRATE_LOCK_ATTEMPTS); safe to run concurrently and repeatedly, and behind a transaction-pooling proxy')
    .addHelpText('after', environmentHelp('migrate'))
    .action(async () => {
      const config = await cliConfig('migrate');
      const log = createLogger(config.logLevel, undefined, { service: 'migrate' }).child({ component: 'migrate' });
      const pool = createPool({ databaseUrl: migrateDatabaseUrl(config), applicationName: 'billing-loader migrate', log, max: 1 });
      try {
        const result = await migrate(pool, { schema: config.databaseSchema, roles: warehouseRoles(config.databaseRoles, config.databaseSchema), log, ...migrateSettings(config) });
        const views = result.derivedObjects === 'recreated' ? 'views re-created' : 'views unchanged';
        console.error(`migrate: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied, ${views} (schema ${config.databaseSchema})`);
      } finally {
        await pool.end();
      }
    });
}
