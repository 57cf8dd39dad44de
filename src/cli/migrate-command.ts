import type { Command } from 'commander';
import { migrate } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { createLogger } from '../log.js';
import { environmentHelp } from './env-help.js';
import { cliConfig } from './cli-config.js';
import { migrateDatabaseUrl } from '../config.js';
import { warehouseRoles } from '../warehouse/schema-roles.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('apply the SQL files in migrations/ in order, as the owner login (MIGRATE_DATABASE_URL, else DATABASE_URL); safe to run concurrently and repeatedly')
    .addHelpText('after', environmentHelp('migrate'))
    .action(async () => {
      const config = await cliConfig('migrate');
      const log = createLogger(config.logLevel, undefined, { service: 'migrate' }).child({ component: 'migrate' });
      const pool = createPool({ databaseUrl: migrateDatabaseUrl(config), applicationName: 'billing-loader migrate', log, max: 1 });
      try {
        const result = await migrate(pool, { schema: config.databaseSchema, roles: warehouseRoles(config.databaseRoles, config.databaseSchema), log });
        console.error(`migrate: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied (schema ${config.databaseSchema})`);
      } finally {
        await pool.end();
      }
    });
}
