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
