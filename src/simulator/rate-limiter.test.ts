import { describe, expect, it } from 'vitest';
import { createRateLimiter } from './rate-limiter.js';

describe('createRateLimiter', () => {
  it('allows a burst, then refuses with the wait until the next token, then refills at the rate', () => {
    let now = 0;
    const limiter = createRateLimiter({ requestsPerSecond: 2, burst: 3 }, () => now);
    expect([limiter.take(), limiter.take(), limiter.take()]).toEqual([
      { ok: true, limit: 3, remaining: 2 },
      { ok: true, limit: 3, remaining: 1 },
      { ok: true, limit: 3, remaining: 0 },
    ]);
    const refused = limiter.take();
    expect(refused).toEqual({ ok: false, retryAfterMs: 500, limit: 3 });
    now = 500;
    expect(limiter.take().ok).toBe(true);
    expect(limiter.take().ok).toBe(false);
  });

  it('is unlimited when the rate is 0', () => {
    const limiter = createRateLimiter({ requestsPerSecond: 0 });
    for (let i = 0; i < 1000; i++) expect(limiter.take().ok).toBe(true);
  });
});
