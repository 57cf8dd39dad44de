import type { Command } from 'commander';
import { createHealth } from '../health.js';
import { startDashboard } from '../dashboard/dashboard-server.js';
import { stopOnSignal } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { startOpsServer } from '../ops-server.js';
import { cliConfig, stopOptions } from './cli-config.js';
import { environmentHelp } from './env-help.js';

/** `billing-loader dashboard`: the page until SIGTERM/SIGINT (src/dashboard/dashboard-server.ts). */
export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description("serve the analysts' web page (charts of the metric views, a resource's timeline) until SIGTERM/SIGINT")
    .addHelpText(
      'after',
      environmentHelp('dashboard') +
        '\n\nServes the page, its JSON endpoints (/api/...), GET /healthz and /readyz on DASHBOARD_PORT; with OPS_PORT, /readyz with reasons and\n/metrics there too. It reads the warehouse as billing_loader_analyst in read-only transactions, whatever login\nDASHBOARD_DATABASE_URL (default DATABASE_URL) names: that login must be a member of billing_loader_analyst.',
    )
    .action(async () => {
      const config = await cliConfig();
      const log = createLogger(config.logLevel);
      const health = createHealth();
      const dashboard = await startDashboard({ log, health }, config);
      let ops;
      try {
        ops = config.opsPort === undefined ? undefined : await startOpsServer(config.opsPort, { health, metrics: createMetrics() });
      } catch (err) {
        await dashboard.stop();
        throw err;
      }
      console.error(`dashboard: http://localhost:${dashboard.port}/ reading schema ${config.databaseSchema}${ops ? `; ops on :${ops.port}` : ''}`);
      process.exitCode = await stopOnSignal(
        {
          async stop() {
            await dashboard.stop();
            await ops?.stop();
          },
        },
        log,
        undefined,
        stopOptions(),
      );
    });
}
