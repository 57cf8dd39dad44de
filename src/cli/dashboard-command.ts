import type { Command } from 'commander';
import { startDashboard } from '../dashboard/dashboard-server.js';
import { cliConfig } from './cli-config.js';
import { composeComponents, startOrStop } from './components.js';
import { environmentHelp } from './env-help.js';

/** `billing-loader dashboard`: the page until SIGTERM/SIGINT (src/dashboard/dashboard-server.ts). */
export function registerDashboard(program: Command): void {
  program
    .command('dashboard')
    .description("serve the analysts' web page (charts of the metric views, a resource's timeline) until SIGTERM/SIGINT")
    .addHelpText(
      'after',
      environmentHelp('dashboard') +
        '\n\nServes the page, its JSON endpoints (/api/...), GET /healthz and /readyz on DASHBOARD_PORT; with OPS_PORT, /readyz with reasons and\n/metrics there too. It reads the warehouse as billing_loader_analyst (DATABASE_ROLES=schema: <DATABASE_SCHEMA>_analyst) in read-only\ntransactions, whatever login DASHBOARD_DATABASE_URL (default DATABASE_URL) names: that login must be a member of that role.',
    )
    .action(async () => {
      const config = await cliConfig('dashboard');
      const c = composeComponents(config, { service: 'dashboard', clientId: 'billing-loader-dashboard' });
      let port = 0;
      await startOrStop(c, async () => {
        const dashboard = await startDashboard(c, config);
        port = dashboard.port;
        c.onStop(() => dashboard.stop());
        if (config.opsPort !== undefined) await c.serveOps(config.opsPort);
      });
      c.log.info('started', { url: `http://localhost:${port}/`, schema: config.databaseSchema, opsPort: config.opsPort });
      process.exitCode = await c.runUntilSignal();
    });
}
