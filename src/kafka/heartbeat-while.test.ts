import { afterEach, describe, expect, it, vi } from 'vitest';
import { heartbeatWhile } from './heartbeat-while.js';

describe('heartbeatWhile', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reports work that outlasts its limit once, and heartbeats meanwhile', async () => {
    vi.useFakeTimers();
    let finish: (v: string) => void = () => undefined;
    const work = new Promise<string>((resolve) => (finish = resolve));
    const heartbeat = vi.fn(async () => undefined);
    const report = vi.fn();
    const done = heartbeatWhile(heartbeat, 100, work, { afterMs: 1000, report });
    await vi.advanceTimersByTimeAsync(900);
    expect(report).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(5000);
    expect(report).toHaveBeenCalledTimes(1);
    expect(report.mock.calls[0]?.[0]).toBeGreaterThanOrEqual(1000);
    expect(heartbeat.mock.calls.length).toBeGreaterThanOrEqual(50);
    finish('ok');
    await expect(done).resolves.toBe('ok');
  });

  it('says nothing of work done in time, and rethrows a failed heartbeat after it', async () => {
    vi.useFakeTimers();
    let finish: (v: string) => void = () => undefined;
    const work = new Promise<string>((resolve) => (finish = resolve));
    const report = vi.fn();
    const done = heartbeatWhile(async () => Promise.reject(new Error('rebalancing')), 100, work, { afterMs: 1000, report });
    const outcome = expect(done).rejects.toThrow('rebalancing');
    await vi.advanceTimersByTimeAsync(500);
    finish('ok');
    await outcome;
    expect(report).not.toHaveBeenCalled();
  });
});
