import { describe, expect, it } from 'vitest';
import { MIN_SLOWDOWN, rateLimitBackoffMs, remainingSlowdown, requestShare } from './rate-limits.js';

describe('rateLimitBackoffMs (a 429 without Retry-After)', () => {
  it('doubles its ceiling with every 429 in a row, from one second, up to the cap', () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => rateLimitBackoffMs(n, 60_000, () => 0.999_999));
    expect(ceilings).toEqual([999, 1999, 3999, 7999, 15_999, 31_999, 59_999, 59_999]);
  });

  it('is full jitter: any wait from 0 up to the ceiling', () => {
    expect(rateLimitBackoffMs(3, 60_000, () => 0)).toBe(0);
    expect(rateLimitBackoffMs(3, 60_000, () => 0.5)).toBe(2000);
    const waits = Array.from({ length: 1000 }, () => rateLimitBackoffMs(4, 60_000));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...waits)).toBeLessThan(8000);
    // Spread, not clustered: instances that hit the limit together come back apart.
    expect(new Set(waits.map((w) => Math.floor(w / 1000))).size).toBe(8);
  });
});

describe('remainingSlowdown (X-RateLimit-Remaining)', () => {
  it('keeps the full rate while a tenth of the limit is left, then slows in proportion, never below the floor', () => {
    expect(remainingSlowdown('10000', '9954')).toBe(1);
    expect(remainingSlowdown('10000', '1000')).toBe(1);
    expect(remainingSlowdown('10000', '500')).toBe(0.5);
    expect(remainingSlowdown('10000', '100')).toBe(0.1);
    expect(remainingSlowdown('10000', '0')).toBe(MIN_SLOWDOWN);
  });

  it('ignores absent or unreadable headers', () => {
    expect(remainingSlowdown(undefined, undefined)).toBe(1);
    expect(remainingSlowdown('10000', undefined)).toBe(1);
    expect(remainingSlowdown('lots', '3')).toBe(1);
    expect(remainingSlowdown('0', '0')).toBe(1);
    expect(remainingSlowdown(['100'], ['5'])).toBe(0.5);
  });
});

describe('requestShare (BILLING_API_REQUESTS_PER_SECOND is the deployment total)', () => {
  it('is the fraction of the request partitions an enricher owns', () => {
    expect(requestShare(6, 6)).toBe(1);
    expect(requestShare(2, 6)).toBeCloseTo(1 / 3);
    expect(requestShare(1, 4)).toBe(0.25);
  });

  it('three enrichers on six partitions share the total exactly', () => {
    const shares = [2, 2, 2].map((owned) => requestShare(owned, 6) ?? 0);
    expect(shares.reduce((a, b) => a + b, 0) * 30).toBeCloseTo(30);
  });

  it('has no share to take when it owns nothing or the count is unknown', () => {
    expect(requestShare(0, 6)).toBeUndefined();
    expect(requestShare(3, 0)).toBeUndefined();
  });
});
