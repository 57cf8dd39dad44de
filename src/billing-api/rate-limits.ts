/**
 * What the billing service's rate-limit answers mean for the request budget (docs/BILLING-API.md,
 * "Request limits"). The service documents a 429 and the headers `X-RateLimit-Limit` /
 * `X-RateLimit-Remaining`, but no `Retry-After` and no window
 * (https://developer.billwerk.io/docs/restApi/rateLimiting). Pure functions, so the schedule and
 * the share are unit-tested apart from the clock.
 */

/** The first ceiling of the wait after a 429 without Retry-After: one second, the header's unit. */
export const RATE_LIMIT_BASE_MS = 1000;

/** Below this fraction of `X-RateLimit-Limit` left, the budget slows down in proportion. */
export const LOW_REMAINING_FRACTION = 0.1;

/** The slowest the budget goes on a low `X-RateLimit-Remaining`: this fraction of its rate. */
export const MIN_SLOWDOWN = 0.05;

/**
 * The wait after the `consecutive`-th 429 in a row that carried no Retry-After: full jitter, a
 * uniform pick in [0, min(maxMs, base × 2^(consecutive−1))). Doubling finds the service's
 * unknown window; the jitter keeps instances that hit the limit together from coming back
 * together.
 */
export function rateLimitBackoffMs(consecutive: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, RATE_LIMIT_BASE_MS * 2 ** Math.max(0, consecutive - 1));
  return Math.floor(random() * ceiling);
}

/**
 * The factor (MIN_SLOWDOWN..1) applied to the budget's rate after an answer that carried the
 * limit headers: 1 while at least LOW_REMAINING_FRACTION of the limit is left, then in
 * proportion to what is left, so the last requests of a window are spread out rather than spent
 * at once into a 429. Headers absent or not numbers: 1 (the service says they may be missing).
 */
export function remainingSlowdown(limitHeader: unknown, remainingHeader: unknown): number {
  const limit = headerNumber(limitHeader);
  const remaining = headerNumber(remainingHeader);
  if (limit === undefined || remaining === undefined || limit <= 0) return 1;
  const lowWater = limit * LOW_REMAINING_FRACTION;
  if (remaining >= lowWater) return 1;
  return Math.max(MIN_SLOWDOWN, remaining / lowWater);
}

/**
 * An enricher's share of the deployment's request budget (BILLING_API_REQUESTS_PER_SECOND is
 * the total of all instances): the fraction of the request topic's partitions it owns, since the
 * reads follow the partitions. Undefined when it owns none (it reads nothing then, so its budget
 * does not matter) or the count is unknown.
 */
export function requestShare(ownedPartitions: number, totalPartitions: number): number | undefined {
  if (!(totalPartitions > 0) || !(ownedPartitions > 0)) return undefined;
  return Math.min(1, ownedPartitions / totalPartitions);
}

function headerNumber(value: unknown): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string' || !/^\s*\d{1,15}\s*$/.test(text)) return undefined;
  return Number(text);
}
