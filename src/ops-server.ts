import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { Health, Readiness } from './health.js';
import type { Logger } from './log.js';

export interface OpsDeps {
  health: Health;
  metrics: Registry;
}

/**
 * GET /livez and /healthz (liveness: 200 while the process answers and no stage is stalled past
 * its restart; 503 with the reason otherwise), GET /readyz (readiness: every check passes; 503
 * with the failing checks otherwise), GET /metrics (Prometheus text format). The reasons carry
 * internal addresses and error text: serve these on an ops port, never on a public one.
 */
export function mountOpsRoutes(app: Express, deps: OpsDeps): void {
  for (const path of LIVENESS_PATHS) {
    app.get(path, (_req, res) => {
      const liveness = deps.health.liveness();
      res.status(liveness.live ? 200 : 503).json(liveness.live ? { status: 'ok' } : { status: 'not live', failing: liveness.failing });
    });
  }
  app.get('/readyz', async (_req, res) => {
    const readiness = await deps.health.readiness();
    res.status(readiness.ready ? 200 : 503).json(readiness);
  });
  mountMetrics(app, deps.metrics);
}

/** The liveness probe's paths: /livez, and /healthz, which deployments already probe. */
const LIVENESS_PATHS = ['/livez', '/healthz'];

/** GET /metrics, Prometheus text format. */
export function mountMetrics(app: Express, metrics: Registry): void {
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.contentType).send(await metrics.metrics());
  });
}

/**
 * The probes of a public port: GET /livez and /healthz answering only live (200) or not (503),
 * and GET /readyz answering only ready (200) or not ready (503). Why it is not ready goes to the log, once per change, and to the ops port.
 */
export function mountPublicProbes(app: Express, deps: Pick<OpsDeps, 'health'>, log: Logger): void {
  const report = readinessReporter(log);
  for (const path of LIVENESS_PATHS) {
    app.get(path, (_req, res) => {
      const { live } = deps.health.liveness();
      res.status(live ? 200 : 503).json({ status: live ? 'ok' : 'not live' });
    });
  }
  app.get('/readyz', async (_req, res) => {
    const readiness = await deps.health.readiness();
    report(readiness);
    res.status(readiness.ready ? 200 : 503).json({ status: readiness.ready ? 'ready' : 'not ready' });
  });
}

/** Logs the failing checks and their reasons when they change (a probe every few seconds would flood the log otherwise). */
export function readinessReporter(log: Logger): (readiness: Readiness) => void {
  let last = '';
  return (readiness) => {
    const failing = Object.fromEntries(Object.entries(readiness.checks).filter(([, c]) => !c.ok).map(([name, c]) => [name, c.reason ?? 'failed']));
    const key = JSON.stringify(failing);
    if (key === last) return;
    last = key;
    if (readiness.ready && key === '{}') log.info('ready');
    else if (readiness.ready) log.warn('ready, but a dependency it can do without is failing', { failing });
    else log.warn('not ready', { failing });
  };
}

export interface RunningOpsServer {
  server: Server;
  /** The port actually bound (differs from the requested one when that is 0). */
  port: number;
  stop(): Promise<void>;
}

/** The ops endpoints on their own port: the enricher and the sink when run alone, and OPS_PORT. */
export async function startOpsServer(port: number, deps: OpsDeps, host = '0.0.0.0'): Promise<RunningOpsServer> {
  const app = express();
  app.disable('x-powered-by');
  mountOpsRoutes(app, deps);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
