import { Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';

/** Labels: `endpoint` is resource, list or token; `resource_type` is empty for the token endpoint. */
export interface BillingApiMetrics {
  /** Every HTTP exchange, by outcome: the status code, `timeout` or `error` (no answer). */
  requests: Counter<'endpoint' | 'resource_type' | 'status'>;
  latency: Histogram<'endpoint' | 'resource_type'>;
  /** Tokens requested after the first: after a 401 or on expiry. */
  tokenRenewals: Counter<'reason'>;
  /** Attempts repeated, by why: rate-limited, server-error, transport, malformed, unauthorized. */
  retries: Counter<'reason'>;
  /** 429 answers received; the budget is meant to keep this at zero. */
  rateLimited: Counter<string>;
  /** Requests per second the budget allows now: the setting × this instance's share × the slowdown on a low X-RateLimit-Remaining. */
  budgetRate: Gauge<string>;
}

/**
 * The client's metrics, `billing_loader_api_*`, on `registry`. Idempotent per registry, so
 * two clients in one process (enricher and backfill) share the series instead of failing to
 * register them twice.
 */
export function createBillingApiMetrics(registry: Registry = new Registry()): BillingApiMetrics {
  const once = <M extends Metric>(name: string, make: () => M): M => (registry.getSingleMetric(name) as M | undefined) ?? make();
  const registers = [registry];
  return {
    requests: once('billing_loader_api_requests_total', () => new Counter({ name: 'billing_loader_api_requests_total', help: 'Billing API requests by endpoint, resource type and status (or timeout/error)', labelNames: ['endpoint', 'resource_type', 'status'] as const, registers })),
    latency: once('billing_loader_api_request_duration_seconds', () => new Histogram({ name: 'billing_loader_api_request_duration_seconds', help: 'Billing API request latency, budget wait excluded', labelNames: ['endpoint', 'resource_type'] as const, buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers })),
    tokenRenewals: once('billing_loader_api_token_renewals_total', () => new Counter({ name: 'billing_loader_api_token_renewals_total', help: 'Access tokens requested after the first, by reason (401, expiry)', labelNames: ['reason'] as const, registers })),
    retries: once('billing_loader_api_retries_total', () => new Counter({ name: 'billing_loader_api_retries_total', help: 'Billing API attempts repeated, by reason', labelNames: ['reason'] as const, registers })),
    rateLimited: once('billing_loader_api_rate_limited_total', () => new Counter({ name: 'billing_loader_api_rate_limited_total', help: '429 answers received from the billing API', registers })),
    budgetRate: once('billing_loader_api_budget_requests_per_second', () => new Gauge({ name: 'billing_loader_api_budget_requests_per_second', help: "Requests per second this process's billing API budget allows now (its share of the deployment's, slowed on a low X-RateLimit-Remaining)", registers })),
  };
}
