import { setTimeout as sleep } from 'node:timers/promises';
import { TokenBucket } from './token-bucket.js';

export interface RequestBudgetOptions {
  /** Most requests started per second, sustained. */
  requestsPerSecond: number;
  /** Requests allowed at once after an idle period. Default: one second's worth (`ceil(requestsPerSecond)`). */
  burst?: number;
  /** Most requests in flight at once. */
  maxConcurrency: number;
  /** Monotonic clock in milliseconds; tests inject one. Default `performance.now`. */
  now?: () => number;
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
  /** Starts no request for `ms` milliseconds (Retry-After of a 429). */
  pauseFor(ms: number): void;
  /** Requests running now. */
  inFlight(): number;
  /** Callers waiting for a slot. */
  queued(): number;
}

export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  if (!(Number.isInteger(options.maxConcurrency) && options.maxConcurrency >= 1)) throw new RangeError(`maxConcurrency must be a positive integer, got ${options.maxConcurrency}`);
  const now = options.now ?? (() => performance.now());
  const bucket = new TokenBucket(options.requestsPerSecond, options.burst ?? Math.max(1, Math.ceil(options.requestsPerSecond)), now);
  const slots = createSemaphore(options.maxConcurrency);
  let pausedUntil = 0;

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
