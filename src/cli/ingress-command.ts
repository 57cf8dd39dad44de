import type { Command } from 'commander';
import { startIngress } from '../ingress/ingress.js';
import { environmentHelp } from './env-help.js';
import { composeComponents } from './components.js';
import { cliConfig } from './cli-config.js';

export function registerIngress(program: Command): void {
  program
    .command('ingress')
    .description('receive webhooks: POST /webhooks (or /webhooks/<INGRESS_TOKEN>) answered 200 once Kafka acknowledged the write; GET /healthz, a bare /readyz and /metrics (with OPS_PORT: /healthz, /readyz with reasons and /metrics on OPS_PORT only). Runs until SIGTERM/SIGINT')
    .addHelpText('after', environmentHelp('ingress'))
    .addHelpText('after', '\nPut it behind a TLS-terminating proxy and set INGRESS_TOKEN: the billing service signs nothing (docs/INGRESS.md).')
    .action(async () => {
      const config = await cliConfig('ingress');
      const c = composeComponents(config, { service: 'ingress', clientId: 'billing-loader-ingress' });
      const running = await startIngress(c, config);
      c.onStop(() => running.stop());
      c.log.info('started', { port: running.port, webhookPath: config.ingressTokens ? '/webhooks/<INGRESS_TOKEN>' : '/webhooks' });
      process.exitCode = await c.runUntilSignal();
    });
}
