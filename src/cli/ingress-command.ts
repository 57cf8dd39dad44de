import type { Command } from 'commander';
import { createHealth } from '../health.js';
import { startIngress } from '../ingress/ingress.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { stopOnSignal } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { createRegistry } from '../registry/registry.js';
import { environmentHelp } from './env-help.js';
import { cliConfig, stopOptions } from './cli-config.js';

export function registerIngress(program: Command): void {
  program
    .command('ingress')
    .description('receive webhooks: POST /webhooks (or /webhooks/<INGRESS_TOKEN>) answered 200 once Kafka acknowledged the write; GET /healthz, a bare /readyz and /metrics (with OPS_PORT: /healthz, /readyz with reasons and /metrics on OPS_PORT only). Runs until SIGTERM/SIGINT')
    .addHelpText('after', environmentHelp('ingress'))
    .addHelpText('after', '\nPut it behind a TLS-terminating proxy and set INGRESS_TOKEN: the billing service signs nothing (docs/INGRESS.md).')
    .action(async () => {
      const config = await cliConfig();
      const log = createLogger(config.logLevel);
      const kafka = createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-ingress', log });
      const registry = createRegistry(config);
      const running = await startIngress({ log, kafka, registry, health: createHealth(), metrics: createMetrics() }, config);
      console.error(`ingress: listening on port ${running.port} (POST /webhooks${config.ingressToken ? '/<INGRESS_TOKEN>' : ''})`);
      process.exitCode = await stopOnSignal(running, log, undefined, stopOptions());
    });
}
