import { describe, expect, it } from 'vitest';
import { LoaderError, RetriesExhaustedError } from './errors.js';
import { backoffDelayMs, retry } from './retry.js';

const transient = () => new LoaderError('try again', { retriable: true });

describe('retry', () => {
  it('retries retriable errors and returns the eventual result', async () => {
    let calls = 0;
    const result = await retry(async () => {
      calls++;
      if (calls < 3) throw transient();
      return 'done';
    }, { minDelayMs: 1, maxDelayMs: 2 });
    expect(result).toBe('done');
    expect(calls).toBe(3);
  });

  it('rethrows a non-retriable error at once', async () => {
    let calls = 0;
    const permanent = new LoaderError('bad', { retriable: false });
    await expect(retry(async () => {
      calls++;
      throw permanent;
    })).rejects.toBe(permanent);
    expect(calls).toBe(1);
  });

  it('never retries programmer errors, even if marked retriable by a predicate', async () => {
    let calls = 0;
    await expect(retry(async () => {
      calls++;
      throw new TypeError('undefined is not a function');
    }, { shouldRetry: () => true })).rejects.toThrow(TypeError);
    expect(calls).toBe(1);
  });

  it('wraps exhaustion with the last cause', async () => {
    const err = await retry(async () => {
      throw transient();
    }, { attempts: 3, minDelayMs: 1, maxDelayMs: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetriesExhaustedError);
    expect((err as RetriesExhaustedError).attempts).toBe(3);
    expect((err as Error).cause).toBeInstanceOf(LoaderError);
  });

  it('bail() stops with the given error', async () => {
    const stop = new Error('stop');
    await expect(retry(async (bail) => bail(stop), { shouldRetry: () => true })).rejects.toBe(stop);
  });

  it('uses the server-imposed delay (Retry-After) instead of backoff', async () => {
    const delays: number[] = [];
    let calls = 0;
    await retry(async () => {
      if (++calls === 1) throw transient();
    }, { retryAfterMs: () => 7, onRetry: (_e, _a, d) => delays.push(d) });
    expect(delays).toEqual([7]);
  });
});

describe('backoffDelayMs', () => {
  it('grows exponentially up to the ceiling, with full jitter', () => {
    expect(backoffDelayMs(0, 100, 10_000, () => 0.999)).toBe(100);
    expect(backoffDelayMs(3, 100, 10_000, () => 0.5)).toBe(400);
    expect(backoffDelayMs(20, 100, 10_000, () => 0.999)).toBe(9990);
    expect(backoffDelayMs(5, 100, 10_000, () => 0)).toBe(100);
  });
});
