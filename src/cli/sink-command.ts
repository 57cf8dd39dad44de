import type { Command } from 'commander';
import { sinkGroupId, startSink } from '../sink/sink.js';
import { environmentHelp } from './env-help.js';
import { composeComponents, startOrStop } from './components.js';
import { cliConfig } from './cli-config.js';

export function registerSink(program: Command): void {
  program
    .command('sink')
    .description('append <prefix>.snapshots and <prefix>.webhooks to the warehouse until SIGTERM/SIGINT (run `migrate` first)')
    .addHelpText(
      'after',
      environmentHelp('sink') +
        '\n\nServes GET /healthz, /readyz and /metrics on OPS_PORT, else SINK_PORT. Records that cannot be decoded or are refused go to\n<prefix>.snapshots.dlq or <prefix>.webhooks.dlq (the one matching their topic).',
    )
    .action(async () => {
      const config = await cliConfig('sink');
      const c = composeComponents(config, { service: 'sink', clientId: 'billing-loader-sink' });
      const opsPort = config.opsPort ?? config.sinkPort;
      await startOrStop(c, async () => {
        await c.serveOps(opsPort);
        const sink = await startSink(c, config);
        c.onStop(() => sink.stop());
      });
      c.log.info('started', { groupId: sinkGroupId(config), schema: config.databaseSchema, opsPort });
      process.exitCode = await c.runUntilSignal();
    });
}
