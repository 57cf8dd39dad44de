import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { BillingApiMetrics } from './api-metrics.js';
import { TransientApiError } from './api-errors.js';
import type { RequestBudget } from './request-budget.js';
import { parseRetryAfterMs } from './retry-after.js';

export interface HttpRequest {
  /** `http(s)://host:port`. */
  origin: string;
  /** Path and query, already encoded; sent as is. */
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Metric labels. */
  endpoint: 'resource' | 'list' | 'token';
  resourceType: string;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The response body as received, decoded as UTF-8. */
  body: string;
  /** Set on a 3xx that src/billing-api/redirects.ts did not follow: why. */
  redirectRefused?: string;
}

/** Sends one HTTP request; answers of any status resolve, only a missing answer rejects. */
export type SendHttp = (request: HttpRequest) => Promise<HttpResponse>;

/**
 * The single place where the client touches the network: every request, token requests
 * included, waits for the request budget, has a time limit, is measured, and has its body read
 * to the end (an unread body would pin the keep-alive connection). A 429 pauses the budget for
 * everyone (its Retry-After, else a growing full-jitter wait); the limit headers of other answers
 * slow the budget down before the limit. A request that gets no answer (timeout, reset, refused) rejects with a
 * TransientApiError that keeps the cause; an aborted caller gets its abort reason.
 */
export function createHttpSender(deps: { dispatcher: Dispatcher; budget: RequestBudget; timeoutMs: number; metrics: BillingApiMetrics }): SendHttp {
  return (request) =>
    deps.budget.run(async () => {
      const labels = { endpoint: request.endpoint, resource_type: request.resourceType };
      const stopTimer = deps.metrics.latency.startTimer(labels);
      const sentAt = deps.budget.now();
      const timeout = AbortSignal.timeout(deps.timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
      try {
        const res = await deps.dispatcher.request({
          origin: request.origin,
          path: request.path,
          method: request.method,
          headers: request.headers,
          body: request.body,
          signal,
          headersTimeout: deps.timeoutMs,
          bodyTimeout: deps.timeoutMs,
        });
        const body = await res.body.text();
        stopTimer();
        deps.metrics.requests.inc({ ...labels, status: String(res.statusCode) });
        if (res.statusCode === 429) {
          deps.metrics.rateLimited.inc();
          deps.budget.rateLimited(parseRetryAfterMs(res.headers['retry-after']), sentAt);
        } else {
          deps.budget.answered({ limit: res.headers['x-ratelimit-limit'], remaining: res.headers['x-ratelimit-remaining'] });
        }
        return { status: res.statusCode, headers: res.headers, body };
      } catch (err) {
        if (request.signal?.aborted) throw request.signal.reason;
        if ((err as { code?: unknown }).code === 'UND_ERR_INVALID_ARG') throw err;
        const timedOut = timeout.aborted || /TIMEOUT/.test(String((err as { code?: unknown }).code));
        deps.metrics.requests.inc({ ...labels, status: timedOut ? 'timeout' : 'error' });
        throw new TransientApiError(timedOut ? `no answer within ${deps.timeoutMs} ms` : `connection failed: ${describe(err)}`, { reason: 'transport', cause: err });
      }
    }, request.signal);
}

function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  return typeof e.code === 'string' ? e.code : String(e.message ?? err);
}
