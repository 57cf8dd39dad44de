import type { Command } from 'commander';
import { startEnricher } from '../enricher/enricher.js';
import { composeComponents, startOrStop } from './components.js';
import { cliConfig } from './cli-config.js';
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
      const config = await cliConfig('enricher');
      const c = composeComponents(config, { service: 'enricher', clientId: 'billing-loader-enricher' });
      const reader = c.billingApi();
      const opsPort = config.opsPort ?? config.enricherPort;
      await startOrStop(c, async () => {
        await c.serveOps(opsPort);
        const enricher = await startEnricher({ ...c, reader }, config);
        c.onStop(() => enricher.stop());
      });
      c.log.info('enricher ready', { opsPort });
      process.exitCode = await c.runUntilSignal();
    });
}
