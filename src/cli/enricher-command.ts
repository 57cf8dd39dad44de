import type { Command } from 'commander';
import { createBillingApiClient } from '../billing-api/client.js';
import { billingApiClientOptions } from '../billing-api/client-options.js';
import { startEnricher } from '../enricher/enricher.js';
import { createHealth } from '../health.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { stopOnSignal } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { startOpsServer } from '../ops-server.js';
import { createRegistry } from '../registry/registry.js';
import { cliConfig, stopOptions } from './cli-config.js';
import { environmentHelp } from './env-help.js';

export function registerEnricher(program: Command): void {
  program
    .command('enricher')
    .description('fetch the current state of every resource a webhook names and publish exact versions to <prefix>.snapshots, until SIGTERM/SIGINT')
    .addHelpText(
      'after',
      environmentHelp('enricher'),
    )
    .action(async () => {
      const config = await cliConfig();
      const apiOptions = billingApiClientOptions(config); // fails early, naming a missing BILLING_* variable
      const log = createLogger(config.logLevel);
      const metrics = createMetrics();
      const health = createHealth();
      const api = createBillingApiClient({ ...apiOptions, logger: log, registry: metrics });
      const opsPort = config.opsPort ?? config.enricherPort;
      const ops = await startOpsServer(opsPort, { health, metrics });
      const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-enricher', log });
      const enricher = await startEnricher({ kafka, registry: createRegistry(config), reader: api, log, metrics, health }, config);
      log.info('enricher ready', { opsPort });
      process.exitCode = await stopOnSignal(
        {
          async stop() {
            await enricher.stop();
            await api.close();
            await ops.stop();
          },
        },
        log,
        undefined,
        stopOptions(),
      );
    });
}
