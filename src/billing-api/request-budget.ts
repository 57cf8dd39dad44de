import { setTimeout as sleep } from 'node:timers/promises';
import { rateLimitBackoffMs, remainingSlowdown } from './rate-limits.js';
import { TokenBucket } from './token-bucket.js';

export interface RequestBudgetOptions {
  /** Most requests started per second, sustained. */
  requestsPerSecond: number;
  /** Requests allowed at once after an idle period. Default: one second's worth (`ceil(requestsPerSecond)`). */
  burst?: number;
  /** Most requests in flight at once. */
  maxConcurrency: number;
  /** Longest pause after a 429 without Retry-After, in milliseconds. Default 60000. */
  maxRateLimitPauseMs?: number;
  /** Monotonic clock in milliseconds; tests inject one. Default `performance.now`. */
  now?: () => number;
  random?: () => number;
  /** Called with the allowed rate whenever it changes (share or slowdown). */
  onRateChange?: (requestsPerSecond: number) => void;
}

/**
 * The one gate every billing API request passes, token requests included (spec 5.5, 8.1: the
 * token endpoint counts against the limits): a rate (token bucket) and a concurrency limit,
 * shared by every caller in the process. A 429 pauses the whole budget, not only the request
 * that got it, so the other callers do not spend the service's patience too.
 */
export interface RequestBudget {
  /** Runs `fn` once a concurrency slot and a rate token are free; the slot is held until `fn` settles. */
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Starts no request for `ms` milliseconds. */
  pauseFor(ms: number): void;
  /**
   * A 429 to a request sent at `sentAt` (this budget's clock): pauses every caller for its
   * Retry-After, or, without one, for a full-jitter wait whose ceiling doubles with each 429 in
   * a row (rate-limits.ts). The 429s of requests already in flight when the last pause began
   * are the same storm, not a new step: they neither double the ceiling nor move the pause.
   * Returns the pause from now, in ms.
   */
  rateLimited(retryAfterMs: number | undefined, sentAt?: number): number;
  /** The budget's clock, in ms: what `sentAt` is measured in. */
  now(): number;
  /** Any other answer: ends a run of 429s, and reads the limit headers to slow down before the limit. */
  answered(headers: { limit?: unknown; remaining?: unknown }): void;
  /** The fraction (0..1] of `requestsPerSecond` (and of the burst) this process may use: its share of a deployment-wide budget. */
  setShare(share: number): void;
  /** Requests per second allowed now: the rate × share × slowdown. */
  currentRate(): number;
  /** Requests running now. */
  inFlight(): number;
  /** Callers waiting for a slot. */
  queued(): number;
}

export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  if (!(Number.isInteger(options.maxConcurrency) && options.maxConcurrency >= 1)) throw new RangeError(`maxConcurrency must be a positive integer, got ${options.maxConcurrency}`);
  const now = options.now ?? (() => performance.now());
  const baseBurst = options.burst ?? Math.max(1, Math.ceil(options.requestsPerSecond));
  const bucket = new TokenBucket(options.requestsPerSecond, baseBurst, now);
  const slots = createSemaphore(options.maxConcurrency);
  const maxPauseMs = options.maxRateLimitPauseMs ?? 60_000;
  let pausedUntil = 0;
  let consecutive429 = 0;
  let pauseStartedAt = -Infinity;
  let share = 1;
  let slowdown = 1;
  const applyRate = () => {
    bucket.setRate(options.requestsPerSecond * share * slowdown, Math.max(1, Math.floor(baseBurst * share * slowdown)));
    options.onRateChange?.(options.requestsPerSecond * share * slowdown);
  };

  return {
    async run(fn, signal) {
      await slots.acquire(signal);
      try {
        // A 429 seen by another caller while this one waited for its turn extends the wait.
        for (let wait = Math.max(bucket.reserve(), pausedUntil - now()); wait > 0; wait = pausedUntil - now()) {
          await sleep(wait, undefined, signal ? { signal } : undefined);
        }
        return await fn();
      } finally {
        slots.release();
      }
    },
    pauseFor(ms) {
      pausedUntil = Math.max(pausedUntil, now() + ms);
    },
    rateLimited(retryAfterMs, sentAt = now()) {
      const t = now();
      if (retryAfterMs === undefined && sentAt < pauseStartedAt) return Math.max(0, pausedUntil - t);
      consecutive429++;
      const ms = retryAfterMs ?? rateLimitBackoffMs(consecutive429, maxPauseMs, options.random);
      pauseStartedAt = t;
      pausedUntil = Math.max(pausedUntil, t + ms);
      return Math.max(0, pausedUntil - t);
    },
    now,
    answered(headers) {
      consecutive429 = 0;
      const next = remainingSlowdown(headers.limit, headers.remaining);
      if (next !== slowdown) {
        slowdown = next;
        applyRate();
      }
    },
    setShare(next) {
      if (!(next > 0 && next <= 1)) throw new RangeError(`share must be a fraction in (0, 1], got ${next}`);
      if (next === share) return;
      share = next;
      applyRate();
    },
    currentRate: () => options.requestsPerSecond * share * slowdown,
    inFlight: () => slots.held(),
    queued: () => slots.waiting(),
  };
}

/** A FIFO counting semaphore whose waiters can give up (abort) without losing a slot. */
function createSemaphore(size: number): { acquire(signal?: AbortSignal): Promise<void>; release(): void; held(): number; waiting(): number } {
  let held = 0;
  const waiters: Array<() => void> = [];
  return {
    acquire(signal) {
      signal?.throwIfAborted();
      if (held < size) {
        held++;
        return Promise.resolve();
      }
      return new Promise<void>((resolve, reject) => {
        const grant = (): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = (): void => {
          const at = waiters.indexOf(grant);
          if (at >= 0) waiters.splice(at, 1);
          reject(signal?.reason);
        };
        waiters.push(grant);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    release() {
      // The slot passes straight to the next waiter, so a newcomer cannot overtake the queue.
      const next = waiters.shift();
      if (next) next();
      else held--;
    },
    held: () => held,
    waiting: () => waiters.length,
  };
}
