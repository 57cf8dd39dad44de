/**
 * A token bucket: `requestsPerSecond` tokens are added per second up to `burst`; each request
 * takes one. The spec states that request limits exist but not their values nor the response
 * (spec 8.2); the 429 with Retry-After is the simulator's assumption.
 */
export interface RateLimitOptions {
  /** Sustained request rate, requests per second. `0` or `Infinity` disables the limit. */
  requestsPerSecond: number;
  /** Bucket size: requests allowed at once after an idle period. Default: one second's worth. */
  burst?: number;
}

export interface RateLimiter {
  /** Takes a token: `{ ok: true }`, or how long until one is available, in milliseconds. */
  take(): { ok: true } | { ok: false; retryAfterMs: number };
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
        return { ok: true };
      }
      return { ok: false, retryAfterMs: ((1 - tokens) / rate) * 1000 };
    },
  };
}
