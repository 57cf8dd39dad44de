import type { Command } from 'commander';
import { createBillingApiClient } from '../billing-api/client.js';
import { billingApiClientOptions } from '../billing-api/client-options.js';
import { createHealth } from '../health.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { stopOnSignal } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { startPipeline } from '../pipeline.js';
import { createRegistry } from '../registry/registry.js';
import { cliConfig, stopOptions } from './cli-config.js';
import { environmentHelp } from './env-help.js';

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('ingress, enricher and sink in one process (small deployments, the demo), until SIGTERM/SIGINT; health and metrics on the ingress port, or on OPS_PORT when set')
    .addHelpText(
      'after',
      environmentHelp('run'),
    )
    .action(async () => {
      const config = await cliConfig();
      const apiOptions = billingApiClientOptions(config);
      const log = createLogger(config.logLevel);
      const metrics = createMetrics();
      const api = createBillingApiClient({ ...apiOptions, logger: log, registry: metrics });
      const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader', log });
      const pipeline = await startPipeline({ kafka, registry: createRegistry(config), reader: api, log, metrics, health: createHealth() }, config);
      console.error(`run: ingress listening on port ${pipeline.ingress.port}; enricher and sink running`);
      process.exitCode = await stopOnSignal(
        {
          async stop() {
            await pipeline.stop();
            await api.close();
          },
        },
        log,
        undefined,
        stopOptions(),
      );
    });
}
