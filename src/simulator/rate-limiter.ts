/**
 * A token bucket: `requestsPerSecond` tokens are added per second up to `burst`; each request
 * takes one. The service documents a 429 and the headers `X-RateLimit-Limit` /
 * `X-RateLimit-Remaining`, and no Retry-After (docs/BILLING-API.md, "Request limits"): the
 * sandbox reports the bucket's size as the limit and its whole tokens left as the remaining.
 */
export interface RateLimitOptions {
  /** Sustained request rate, requests per second. `0` or `Infinity` disables the limit. */
  requestsPerSecond: number;
  /** Bucket size: requests allowed at once after an idle period. Default: one second's worth. */
  burst?: number;
}

export interface RateLimiter {
  /** Takes a token: `{ ok: true }` with what is left, or how long until one is available, in milliseconds. Without a limit, no `limit`. */
  take(): { ok: true; limit?: number; remaining?: number } | { ok: false; retryAfterMs: number; limit: number };
}

export function createRateLimiter(options: RateLimitOptions, now: () => number = () => performance.now()): RateLimiter {
  const rate = options.requestsPerSecond;
  if (!(rate > 0) || rate === Infinity) return { take: () => ({ ok: true }) };
  const burst = Math.max(1, options.burst ?? Math.ceil(rate));
  let tokens = burst;
  let last = now();
  return {
    take() {
      const t = now();
      tokens = Math.min(burst, tokens + ((t - last) / 1000) * rate);
      last = t;
      if (tokens >= 1) {
        tokens -= 1;
        return { ok: true, limit: burst, remaining: Math.floor(tokens) };
      }
      return { ok: false, retryAfterMs: ((1 - tokens) / rate) * 1000, limit: burst };
    },
  };
}
