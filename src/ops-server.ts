import type { Server } from 'node:http';
import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { Health } from './health.js';

export interface OpsDeps {
  health: Health;
  metrics: Registry;
}

/**
 * GET /healthz (liveness: the process answers), GET /readyz (readiness: every check passes;
 * 503 with the failing checks otherwise), GET /metrics (Prometheus text format).
 */
export function mountOpsRoutes(app: Express, deps: OpsDeps): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const readiness = await deps.health.readiness();
    res.status(readiness.ready ? 200 : 503).json(readiness);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.contentType).send(await deps.metrics.metrics());
  });
}

/** The ops endpoints on their own port, for the enricher and the sink when run alone. */
export async function startOpsServer(port: number, deps: OpsDeps, host = '0.0.0.0'): Promise<{ server: Server; stop(): Promise<void> }> {
  const app = express();
  app.disable('x-powered-by');
  mountOpsRoutes(app, deps);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  return {
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
