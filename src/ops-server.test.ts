import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { createHealth, type Health } from './health.js';
import type { Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { mountOpsRoutes, mountPublicProbes, readinessReporter } from './ops-server.js';

function recordingLogger(): { log: Logger; lines: [string, string, Record<string, unknown> | undefined][] } {
  const lines: [string, string, Record<string, unknown> | undefined][] = [];
  const log: Logger = {
    debug: (msg, fields) => void lines.push(['debug', msg, fields]),
    info: (msg, fields) => void lines.push(['info', msg, fields]),
    warn: (msg, fields) => void lines.push(['warn', msg, fields]),
    error: (msg, fields) => void lines.push(['error', msg, fields]),
    child: () => log,
  };
  return { log, lines };
}

describe('readinessReporter', () => {
  it('logs the reasons the public /readyz leaves out, once per change', () => {
    const { log, lines } = recordingLogger();
    const report = readinessReporter(log);
    const down = { ready: false, checks: { 'ingress.kafka': { ok: false, reason: 'connect ECONNREFUSED 10.0.0.7:9092' }, 'ingress.schema-registry': { ok: true } } };
    report(down);
    report(down);
    report({ ready: true, checks: { 'ingress.kafka': { ok: true } } });
    report({ ready: true, checks: { 'ingress.kafka': { ok: true } } });
    expect(lines).toEqual([
      ['warn', 'not ready', { failing: { 'ingress.kafka': 'connect ECONNREFUSED 10.0.0.7:9092' } }],
      ['info', 'ready', undefined],
    ]);
  });
});

describe('liveness probes', () => {
  const serve = async (mount: (app: express.Express, health: Health) => void) => {
    const health = createHealth();
    const app = express();
    mount(app, health);
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { health, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  };

  it('answer 503 with the reason on the ops routes while a stage is not live, and 200 again after', async () => {
    const s = await serve((app, health) => mountOpsRoutes(app, { health, metrics: createMetrics() }));
    try {
      for (const path of ['/livez', '/healthz']) expect((await fetch(`${s.url}${path}`)).status).toBe(200);
      s.health.setLiveness('stage.sink', 'stalled for 300 s');
      for (const path of ['/livez', '/healthz']) {
        const res = await fetch(`${s.url}${path}`);
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({ status: 'not live', failing: { 'stage.sink': 'stalled for 300 s' } });
      }
      s.health.setLiveness('stage.sink', undefined);
      expect((await fetch(`${s.url}/livez`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('answer 503 without the reason on a public port', async () => {
    const { log } = recordingLogger();
    const s = await serve((app, health) => mountPublicProbes(app, { health }, log));
    try {
      s.health.setLiveness('stage.ingress', 'stalled for 300 s at 10.0.0.7:9092');
      const res = await fetch(`${s.url}/livez`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'not live' });
    } finally {
      await s.close();
    }
  });
});
