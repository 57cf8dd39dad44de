import type { RequestHandler } from 'express';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RateLimiter } from './rate-limiter.js';
import type { RequestStats } from './request-stats.js';
import { routeKey } from './request-stats.js';
import type { SeededRandom } from './seeded-random.js';

/**
 * Injected trouble on the token and resource endpoints, to prove a client survives it. All
 * rates are fractions of requests, 0..1, decided by a seeded generator. Changeable at run time
 * (`simulator.setFaults`).
 */
export interface FaultOptions {
  /** Delay before every answer, in milliseconds. Default 0. */
  latencyMs: number;
  /** Extra random delay, uniform in [0, latencyJitterMs] milliseconds. Default 0. */
  latencyJitterMs: number;
  /** Fraction of requests answered 500, 502 or 503 (body `{"Message": ...}`). Default 0. */
  errorRate: number;
  /** Fraction of requests that never get an answer: the client must time out. Default 0. */
  timeoutRate: number;
  /** Fraction of requests whose connection is reset without an answer. Default 0. */
  resetRate: number;
  /** Fraction of GET requests answered 200 with an HTML maintenance page instead of JSON (a proxy in front of the API). Default 0. */
  unreadableRate: number;
}

const MAINTENANCE_PAGE = '<!DOCTYPE html><html><head><title>Maintenance</title></head><body><h1>We will be back soon</h1></body></html>';

export const NO_FAULTS: Readonly<FaultOptions> = { latencyMs: 0, latencyJitterMs: 0, errorRate: 0, timeoutRate: 0, resetRate: 0, unreadableRate: 0 };

/**
 * Request limit first (a rejected request costs the upstream nothing, so it answers at once),
 * then latency, then the injected faults. Applies to the token endpoint too: spec 5.5 and 8.1
 * say token requests count against the limits.
 */
export function limitAndFaults(deps: { limiter: () => RateLimiter; faults: () => FaultOptions; random: SeededRandom; stats: RequestStats }): RequestHandler {
  return async (req, res, next) => {
    const verdict = deps.limiter().take();
    if (!verdict.ok) {
      // As the service documents it: a 429 with the limit headers, no Retry-After.
      res.set({ 'X-RateLimit-Limit': String(verdict.limit), 'X-RateLimit-Remaining': '0' });
      res.status(429).json({ Message: 'Too many requests.' });
      return;
    }
    if (verdict.limit !== undefined) res.set({ 'X-RateLimit-Limit': String(verdict.limit), 'X-RateLimit-Remaining': String(verdict.remaining ?? 0) });
    const f = deps.faults();
    const delay = f.latencyMs + (f.latencyJitterMs > 0 ? deps.random.next() * f.latencyJitterMs : 0);
    if (delay > 0) await sleep(delay);
    const roll = deps.random.next();
    if (roll < f.resetRate) {
      deps.stats.record(routeKey(req.method, req.path), 'reset');
      req.socket.resetAndDestroy();
      return;
    }
    if (roll < f.resetRate + f.timeoutRate) {
      // Never answered; the server's stop() closes such connections.
      deps.stats.record(routeKey(req.method, req.path), 'hang');
      return;
    }
    if (roll < f.resetRate + f.timeoutRate + f.errorRate) {
      const status = deps.random.pick([500, 502, 503]);
      res.status(status).json({ Message: 'Injected server error' });
      return;
    }
    if (req.method === 'GET' && roll < f.resetRate + f.timeoutRate + f.errorRate + f.unreadableRate) {
      res.status(200).type('html').send(MAINTENANCE_PAGE);
      return;
    }
    next();
  };
}
