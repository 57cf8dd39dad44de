import type { Command } from 'commander';
import { createHealth } from '../health.js';
import { stopOnSignal } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { startOpsServer } from '../ops-server.js';
import { sinkGroupId, startSink } from '../sink/sink.js';
import { environmentHelp } from './env-help.js';
import { cliConfig, stopOptions } from './cli-config.js';

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
      const config = await cliConfig();
      const log = createLogger(config.logLevel);
      const health = createHealth();
      const metrics = createMetrics();
      const opsPort = config.opsPort ?? config.sinkPort;
      const ops = await startOpsServer(opsPort, { health, metrics });
      let sink;
      try {
        sink = await startSink({ log, metrics, health }, config);
      } catch (err) {
        await ops.stop();
        throw err;
      }
      console.error(`sink: consuming as group ${sinkGroupId(config)} into schema ${config.databaseSchema}; ops on :${opsPort}`);
      process.exitCode = await stopOnSignal(
        {
          async stop() {
            await sink.stop();
            await ops.stop();
          },
        },
        log,
        undefined,
        stopOptions(),
      );
    });
}
