import type { Command } from 'commander';
import { startPipeline } from '../pipeline.js';
import { composeComponents, startOrStop } from './components.js';
import { cliConfig } from './cli-config.js';
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
      const config = await cliConfig('run');
      const c = composeComponents(config, { service: 'run', clientId: 'billing-loader' });
      const reader = c.billingApi();
      let ingressPort = 0;
      await startOrStop(c, async () => {
        const pipeline = await startPipeline({ ...c, reader }, config);
        ingressPort = pipeline.ingress.port;
        c.onStop(() => pipeline.stop());
      });
      c.log.info('started', { ingressPort, stages: ['ingress', 'enricher', 'sink'] });
      process.exitCode = await c.runUntilSignal();
    });
}
