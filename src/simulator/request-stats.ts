import type { RequestHandler } from 'express';
import { RESOURCE_PATHS } from './resource-types.js';

/**
 * What the simulator answered, by route and outcome, so tests can assert on the client's
 * behaviour (token reuse, backoff on 429, no fetch storms). Outcomes are HTTP status codes as
 * strings, or `reset` / `hang` for injected connection faults.
 */
export interface RequestCounts {
  total: number;
  /** route key (`POST /oauth/token`, `GET /api/v1/Contracts/:id`, `GET /api/v1/Contracts`) → outcome → count */
  byRoute: Record<string, Record<string, number>>;
}

export class RequestStats {
  private counts: RequestCounts = { total: 0, byRoute: {} };

  record(route: string, outcome: string): void {
    this.counts.total++;
    const row = (this.counts.byRoute[route] ??= {});
    row[outcome] = (row[outcome] ?? 0) + 1;
  }

  snapshot(): RequestCounts {
    return structuredClone(this.counts);
  }

  reset(): void {
    this.counts = { total: 0, byRoute: {} };
  }

  /** Counts every answered request once its status is known. */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const route = routeKey(req.method, req.path);
      res.once('finish', () => this.record(route, String(res.statusCode)));
      next();
    };
  }
}

const RESOURCE_SEGMENTS = new Set(Object.values(RESOURCE_PATHS).map((p) => p.toLowerCase()));

/** Groups paths by route so that counts do not grow with the number of ids. */
export function routeKey(method: string, path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  if (/^\/oauth\/token$/i.test(trimmed)) return `${method} /oauth/token`;
  const m = /^\/api\/v1\/([^/]+)(\/[^/]+)?$/i.exec(trimmed);
  if (m?.[1] && RESOURCE_SEGMENTS.has(m[1].toLowerCase())) return `${method} /api/v1/${m[1]}${m[2] ? '/:id' : ''}`;
  return `${method} other`;
}
