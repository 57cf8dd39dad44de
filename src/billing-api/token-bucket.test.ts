import { describe, expect, it } from 'vitest';
import { TokenBucket } from './token-bucket.js';

function clock(start = 1000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

describe('TokenBucket', () => {
  it('lets a burst through at once, then spaces requests at the rate', () => {
    const c = clock();
    const bucket = new TokenBucket(10, 3, c.now);
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    expect(bucket.reserve()).toBeCloseTo(100);
    expect(bucket.reserve()).toBeCloseTo(200);
    expect(bucket.reserve()).toBeCloseTo(300);
  });

  it('pays back debt as time passes', () => {
    const c = clock();
    const bucket = new TokenBucket(10, 1, c.now);
    expect(bucket.reserve()).toBe(0);
    expect(bucket.reserve()).toBeCloseTo(100);
    c.advance(100);
    expect(bucket.available()).toBeCloseTo(0);
    expect(bucket.reserve()).toBeCloseTo(100);
  });

  it('saves up no more than the burst while idle', () => {
    const c = clock();
    const bucket = new TokenBucket(5, 2, c.now);
    c.advance(60_000);
    expect(bucket.available()).toBe(2);
    expect([bucket.reserve(), bucket.reserve()]).toEqual([0, 0]);
    expect(bucket.reserve()).toBeCloseTo(200);
  });

  it('never admits more than burst + rate * t requests in any interval t', () => {
    const c = clock();
    const rate = 20;
    const burst = 4;
    const bucket = new TokenBucket(rate, burst, c.now);
    // Requests arriving every 7 ms (faster than the rate); each is sent at arrival + wait.
    const sentAt: number[] = [];
    for (let i = 0; i < 200; i++) {
      sentAt.push(c.now() + bucket.reserve());
      c.advance(7);
    }
    for (let i = 0; i < sentAt.length; i++) {
      for (let j = i; j < sentAt.length; j++) {
        const interval = sentAt[j]! - sentAt[i]!;
        expect(j - i + 1).toBeLessThanOrEqual(burst + (rate * interval) / 1000 + 1e-9);
      }
    }
  });

  it('refuses a rate or burst that cannot work', () => {
    expect(() => new TokenBucket(0, 1)).toThrow(RangeError);
    expect(() => new TokenBucket(Infinity, 1)).toThrow(RangeError);
    expect(() => new TokenBucket(1, 0)).toThrow(RangeError);
  });
});
