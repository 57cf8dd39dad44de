import { setTimeout as sleep } from 'node:timers/promises';
import { RetriesExhaustedError, isProgrammerError, isRetriable } from './errors.js';

export interface RetryOptions {
  /** Attempts in all, the first included. Default 8. `Infinity` retries until `signal` aborts. */
  attempts?: number;
  /** First backoff, in milliseconds. Default 100. */
  minDelayMs?: number;
  /** Backoff ceiling, in milliseconds. Default 30000. */
  maxDelayMs?: number;
  /** Decides whether an error is worth another attempt; default: `isRetriable`. */
  shouldRetry?: (err: unknown) => boolean;
  /** Server-imposed wait (e.g. Retry-After), in milliseconds, read from the error; overrides backoff. */
  retryAfterMs?: (err: unknown) => number | undefined;
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  signal?: AbortSignal;
  random?: () => number;
}

export type Bail = (err: unknown) => never;

class BailSignal {
  constructor(readonly err: unknown) {}
}

/** Full-jitter exponential backoff: a uniform pick in [0, min(max, min * 2^attempt)]. */
export function backoffDelayMs(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** attempt);
  return Math.max(minMs, Math.floor(random() * ceiling));
}

/**
 * Runs `fn` until it succeeds, bails, throws an error that is not retriable, or runs out of
 * attempts (then throws RetriesExhaustedError with the last error as cause). Programmer errors
 * (TypeError and kin) are rethrown at once: retrying a bug only hides it.
 */
export async function retry<T>(fn: (bail: Bail, attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 8;
  const minMs = options.minDelayMs ?? 100;
  const maxMs = options.maxDelayMs ?? 30_000;
  const shouldRetry = options.shouldRetry ?? isRetriable;
  const bail: Bail = (err) => {
    throw new BailSignal(err);
  };
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(bail, attempt);
    } catch (err) {
      if (err instanceof BailSignal) throw err.err;
      if (isProgrammerError(err) || !shouldRetry(err)) throw err;
      if (attempt + 1 >= attempts) throw new RetriesExhaustedError(attempt + 1, err);
      if (options.signal?.aborted) throw err;
      const delay = options.retryAfterMs?.(err) ?? backoffDelayMs(attempt, minMs, maxMs, options.random);
      options.onRetry?.(err, attempt + 1, delay);
      await sleep(delay, undefined, options.signal ? { signal: options.signal } : undefined).catch(() => {
        throw err;
      });
    }
  }
}
