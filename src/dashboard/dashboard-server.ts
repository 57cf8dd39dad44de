import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import express, { type Request, type Response } from 'express';
import type pg from 'pg';
import { dashboardDatabaseUrl, type Config } from '../config.js';
import type { Health } from '../health.js';
import type { Logger } from '../log.js';
import { mountPublicProbes } from '../ops-server.js';
import { packageRoot } from '../package-root.js';
import { createAnalystPool } from './analyst-pool.js';
import { warehouseRoles } from '../warehouse/schema-roles.js';
import { createDashboardData, type DashboardData } from './dashboard-data.js';
import { searchCustomers } from './customer-search.js';
import { BadParameter, parseCurrency, parseDayRange, parseResourceId, parseSearchText } from './request-params.js';
import { createRevenueData, type RevenueData } from './revenue-data.js';

/** The page's HTML, script and stylesheet, shipped in the package beside `warehouse/` and `schemas/`. */
export const DASHBOARD_ASSETS = join(packageRoot, 'dashboard');

/**
 * chart.js's browser build, served by the loader itself (users may be offline). The package's
 * `exports` do not name dist/chart.umd.js, so it is found beside the entry point `require`
 * resolves, wherever npm or npx installed the package.
 */
export function chartJsFile(): string {
  return join(dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.js');
}

export interface DashboardDeps {
  log: Logger;
  health: Health;
}

export interface RunningDashboard {
  /** The port actually bound (differs from the requested one when that is 0). */
  port: number;
  url: string;
  /** The analyst pool the page reads through (for tests: it must not be able to write). */
  pool: pg.Pool;
  stop(): Promise<void>;
}

/**
 * `billing-loader dashboard`: the analysts' page, its JSON endpoints, /healthz and /readyz on
 * DASHBOARD_PORT. It reads the warehouse through a pool whose every connection is the analyst
 * role in read-only transactions (analyst-pool.ts), whatever login DASHBOARD_DATABASE_URL names.
 */
export async function startDashboard(deps: DashboardDeps, config: Config, options: { host?: string; port?: number } = {}): Promise<RunningDashboard> {
  const log = deps.log.child({ component: 'dashboard' });
  const pool = createAnalystPool({ databaseUrl: dashboardDatabaseUrl(config), analystRole: warehouseRoles(config.databaseRoles, config.databaseSchema).analyst, log });
  const data = createDashboardData(pool, config.databaseSchema);
  deps.health.addCheck('database', () => data.check());
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use((_req, res, next) => {
    // Nothing but the loader itself: no CDN, no inline script.
    res.set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'");
    res.set('X-Content-Type-Options', 'nosniff');
    next();
  });
  mountPublicProbes(app, deps, log);
  mountApi(app, data, createRevenueData(pool, config.databaseSchema), (text) => searchCustomers(pool, config.databaseSchema, text), log);
  app.get('/assets/chart.umd.js', (_req, res) => res.sendFile(chartJsFile()));
  app.use('/assets', express.static(DASHBOARD_ASSETS, { index: false }));
  app.get('/', (_req, res) => res.sendFile(join(DASHBOARD_ASSETS, 'index.html')));
  app.use((_req, res) => {
    res.status(404).json({ error: 'not-found', message: 'no such page or endpoint' });
  });

  const host = options.host ?? '0.0.0.0';
  let server: Server;
  try {
    server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(options.port ?? config.dashboardPort, host, (err?: Error) => (err ? reject(err) : resolve(s)));
    });
  } catch (err) {
    await pool.end();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  log.info('dashboard listening', { port, schema: config.databaseSchema });
  return {
    port,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    pool,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // In-flight answers are a query away from done; only connections idle after that go.
        setTimeout(() => server.closeAllConnections(), 5000).unref();
      });
      await pool.end();
    },
  };
}

type Handler = (req: Request) => Promise<unknown>;

function mountApi(app: express.Express, data: DashboardData, revenue: RevenueData, search: (text: string) => Promise<unknown>, log: Logger): void {
  const route = (path: string, handler: Handler) =>
    app.get(path, async (req: Request, res: Response) => {
      try {
        const body = await handler(req);
        if (body === undefined) {
          res.status(404).json({ error: 'not-found', message: 'no contract, customer or other resource has this id' });
          return;
        }
        res.set('Cache-Control', 'no-store').json(body);
      } catch (err) {
        if (err instanceof BadParameter) {
          res.status(400).json({ error: 'bad-request', parameter: err.parameter, message: err.message });
          return;
        }
        log.error('dashboard query failed', { path, err });
        res.status(500).json({ error: 'internal', message: 'the warehouse query failed; see the dashboard log' });
      }
    });
  route('/api/range', async () => ({ range: await data.range() }));
  route('/api/currencies', () => revenue.currencies());
  route('/api/revenue', (req) => revenue.revenue(parseDayRange(req.query), parseCurrency(req.query.currency)));
  route('/api/customers', (req) => search(parseSearchText(req.query.q)));
  route('/api/contract-daily', (req) => data.contractDaily(parseDayRange(req.query)));
  route('/api/movements', (req) => data.movements(parseDayRange(req.query)));
  route('/api/trial-cohorts', (req) => data.trialCohorts(parseDayRange(req.query)));
  route('/api/episodes', (req) => data.episodes(parseDayRange(req.query)));
  route('/api/payments', (req) => data.payments(parseDayRange(req.query)));
  route('/api/pipeline-health', () => data.pipelineHealth());
  route('/api/timeline', (req) => data.timeline(parseResourceId(req.query.id)));
}
