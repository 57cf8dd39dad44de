import { describe, expect, it } from 'vitest';
import { parseRetryAfterMs } from './retry-after.js';

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfterMs('0', now)).toBe(0);
    expect(parseRetryAfterMs('3', now)).toBe(3000);
    expect(parseRetryAfterMs(' 120 ', now)).toBe(120_000);
  });

  it('reads an HTTP-date as the time left until it', () => {
    expect(parseRetryAfterMs('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfterMs('Tuesday, 31-Dec-24 23:59:00 GMT', now)).toBe(0);
  });

  it('treats a date in the past as no wait', () => {
    expect(parseRetryAfterMs('Tue, 31 Dec 2024 23:00:00 GMT', now)).toBe(0);
  });

  it('takes the first of repeated headers', () => {
    expect(parseRetryAfterMs(['2', '9'], now)).toBe(2000);
  });

  it.each([undefined, '', '-1', '1.5', 'soon', '1e3', 'Wed, not a date'])('ignores %j', (value) => {
    expect(parseRetryAfterMs(value, now)).toBeUndefined();
  });
});
