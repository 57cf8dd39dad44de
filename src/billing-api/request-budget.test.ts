import { describe, expect, it } from 'vitest';
import { createRequestBudget } from './request-budget.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('createRequestBudget', () => {
  it('runs no more than maxConcurrency at once, and the rest in arrival order', async () => {
    const budget = createRequestBudget({ requestsPerSecond: 1e6, maxConcurrency: 2 });
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    let peak = 0;
    const runs = gates.map((gate, i) =>
      budget.run(async () => {
        started.push(i);
        peak = Math.max(peak, budget.inFlight());
        await gate.promise;
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    expect(budget.queued()).toBe(2);
    gates[1]!.resolve();
    await runs[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    for (const g of gates) g.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(peak).toBe(2);
    expect(budget.inFlight()).toBe(0);
  });

  it('frees the slot when the request fails', async () => {
    const budget = createRequestBudget({ requestsPerSecond: 1e6, maxConcurrency: 1 });
    await expect(budget.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await budget.run(() => Promise.resolve('ok'))).toBe('ok');
  });

  it('lets a waiter abort without taking or losing a slot', async () => {
    const budget = createRequestBudget({ requestsPerSecond: 1e6, maxConcurrency: 1 });
    const gate = deferred();
    const first = budget.run(() => gate.promise);
    const abort = new AbortController();
    const second = budget.run(() => Promise.resolve('never'), abort.signal);
    abort.abort(new Error('shutting down'));
    await expect(second).rejects.toThrow('shutting down');
    expect(budget.queued()).toBe(0);
    gate.resolve();
    await first;
    expect(await budget.run(() => Promise.resolve('third'))).toBe('third');
  });

  it('refuses a concurrency that cannot work', () => {
    expect(() => createRequestBudget({ requestsPerSecond: 1, maxConcurrency: 0 })).toThrow(RangeError);
  });
});

describe('the request budget on rate limits', () => {
  const at = (t: { now: number }) => () => t.now;

  it('pauses for Retry-After when given, else for a full-jitter wait whose ceiling doubles per 429 in a row', () => {
    const t = { now: 0 };
    const budget = createRequestBudget({ requestsPerSecond: 100, maxConcurrency: 4, now: at(t), random: () => 0.999_999 });
    expect(budget.rateLimited(5000, 0)).toBe(5000);
    // A 429 with Retry-After counts in the run too.
    t.now = 5000;
    expect(budget.rateLimited(undefined, 5000)).toBe(1999);
    t.now = 9000;
    expect(budget.rateLimited(undefined, 9000)).toBe(3999);
    budget.answered({});
    t.now = 20_000;
    // An answer that is not a 429 ends the run: the ceiling starts over.
    expect(budget.rateLimited(undefined, 20_000)).toBe(999);
  });

  it('counts the 429s of requests already in flight when a pause began as the same storm', () => {
    const t = { now: 0 };
    const budget = createRequestBudget({ requestsPerSecond: 100, maxConcurrency: 16, now: at(t), random: () => 0.999_999 });
    t.now = 10;
    expect(budget.rateLimited(undefined, 0)).toBe(999);
    // Ten more 429s of requests sent at 0..9: the pause stays, the ceiling does not grow.
    for (let i = 0; i < 10; i++) expect(budget.rateLimited(undefined, i)).toBe(999);
    t.now = 1100;
    expect(budget.rateLimited(undefined, 1050)).toBe(1999);
  });

  it('slows down on a low X-RateLimit-Remaining and takes its share of the rate', () => {
    const budget = createRequestBudget({ requestsPerSecond: 30, maxConcurrency: 4 });
    expect(budget.currentRate()).toBe(30);
    budget.setShare(1 / 3);
    expect(budget.currentRate()).toBeCloseTo(10);
    budget.answered({ limit: '10000', remaining: '250' });
    expect(budget.currentRate()).toBeCloseTo(2.5);
    budget.answered({ limit: '10000', remaining: '9000' });
    expect(budget.currentRate()).toBeCloseTo(10);
    expect(() => budget.setShare(0)).toThrow(RangeError);
  });
});
