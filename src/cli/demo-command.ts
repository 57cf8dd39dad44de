import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { migrate } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { createLogger } from '../log.js';
import { readStackPorts } from '../stack/settings.js';
import { stackStatus, stackUp } from '../stack/stack.js';
import { environmentHelp } from './env-help.js';

/**
 * `npm start`. For now: bring the local stack up (unless services are configured), apply the
 * migrations and report what runs. The full scenario (simulator → ingress → enricher → sink →
 * summary) replaces this once the pipeline stages exist (issue 7).
 */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the embedded default (npm start): bring the local stack up, migrate the warehouse, report status')
    .addHelpText('after', environmentHelp(['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'DATABASE_SCHEMA', 'STACK_DIR']))
    .action(async () => {
      const useLocalStack = !process.env.KAFKA_BROKERS && !process.env.DATABASE_URL && !process.env.SCHEMA_REGISTRY_URL;
      const stackDir = loadConfig(process.env).stackDir;
      if (useLocalStack) {
        console.error('demo: bringing up the local stack (first run downloads Kafka and the registry from Maven Central)');
        await stackUp({ dir: stackDir, ports: readStackPorts(stackDir), progress: (l) => console.error(`  ${l}`) });
      }
      const config = loadConfig(process.env);
      const log = createLogger(config.logLevel).child({ component: 'demo' });
      const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'billing-loader demo', log, max: 1 });
      try {
        const result = await migrate(pool, { schema: config.databaseSchema, log });
        console.log(`warehouse schema '${config.databaseSchema}': ${result.applied.length} migrations applied, ${result.alreadyApplied.length} already there`);
      } finally {
        await pool.end();
      }
      if (useLocalStack) {
        for (const s of stackStatus({ dir: stackDir, ports: readStackPorts(stackDir) })) console.log(`${s.name.padEnd(16)} ${s.state} on 127.0.0.1:${s.port}`);
        console.log('\nThe stack keeps running; stop it with: npx billing-loader stack down');
      }
      console.log(`Explore the warehouse: psql ${config.databaseUrl}`);
    });
}
