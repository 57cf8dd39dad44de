import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../log.js';
import { createCommitThrottle } from './commit-throttle.js';

/** A stand-in for kafkajs's eachBatch payload: resolved offsets, and the commits made. */
function consumer() {
  const state = { running: true, resolved: 0, committed: [] as number[], failures: 0, failure: 'GROUP_LOAD_IN_PROGRESS' };
  const payload = {
    isRunning: () => state.running,
    uncommittedOffsets: () => ({ topics: state.resolved > (state.committed.at(-1) ?? -1) ? [{ topic: 't', partitions: [{ partition: 0, offset: String(state.resolved) }] }] : [] }),
    commitOffsetsIfNecessary: async (offsets?: { topics: { partitions: { offset: string }[] }[] }) => {
      if (state.failures > 0) {
        state.failures--;
        throw Object.assign(new Error('the coordinator failed the commit'), { type: state.failure, retriable: true });
      }
      state.committed.push(Number(offsets?.topics[0]?.partitions[0]?.offset));
    },
  };
  const batch = (offset: number) => {
    state.resolved = offset;
    return payload;
  };
  return { state, batch };
}

/** A throttle that committed offset 1 at once and holds offset 2 for the end of its interval. */
async function withOffset2Pending() {
  const { state, batch } = consumer();
  const throttle = createCommitThrottle(silentLogger, 1000);
  await throttle.commit(batch(1));
  await throttle.commit(batch(2));
  return { state, batch, throttle };
}

describe('commit throttle', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('commits the first batch at once and later ones at most once per interval', async () => {
    const { state, batch } = consumer();
    const throttle = createCommitThrottle(silentLogger, 1000);
    await throttle.commit(batch(10));
    for (let offset = 11; offset <= 19; offset++) {
      await vi.advanceTimersByTimeAsync(100);
      await throttle.commit(batch(offset));
    }
    expect(state.committed).toEqual([10]);
    await vi.advanceTimersByTimeAsync(100);
    expect(state.committed).toEqual([10, 19]);
  });

  it('commits the last offsets at the end of the interval when no batch follows', async () => {
    const { state } = await withOffset2Pending();
    await vi.advanceTimersByTimeAsync(999);
    expect(state.committed).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1);
    expect(state.committed).toEqual([1, 2]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(state.committed).toEqual([1, 2]);
  });

  it('commits at once while the consumer stops, and flush() commits what is pending', async () => {
    const { state, batch, throttle } = await withOffset2Pending();
    await throttle.flush();
    expect(state.committed).toEqual([1, 2]);
    state.running = false;
    await throttle.commit(batch(3));
    expect(state.committed).toEqual([1, 2, 3]);
  });

  it('commits nothing from its timer once the consumer is no longer running', async () => {
    const { state } = await withOffset2Pending();
    state.running = false;
    await vi.advanceTimersByTimeAsync(2000);
    expect(state.committed).toEqual([1]);
  });

  // After a broker restart the group coordinator answers "loading" for a while; the last batch's
  // deferred commit failing then left the group's lag above zero for good while idle.
  it('tries a failed deferred commit again at the next interval until it succeeds', async () => {
    const { state } = await withOffset2Pending();
    state.failures = 2;
    await vi.advanceTimersByTimeAsync(1000);
    expect(state.committed).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(state.committed).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(state.committed).toEqual([1, 2]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(state.committed).toEqual([1, 2]);
  });

  // kafkajs retries a failed eachBatch in place from the last resolved offset, so a batch whose
  // immediate commit failed is never read again: if no batch follows, only a retry commits it.
  it('tries a failed immediate commit again at the next interval, without failing the batch', async () => {
    const { state, batch } = consumer();
    const throttle = createCommitThrottle(silentLogger, 1000);
    state.failures = 1;
    await expect(throttle.commit(batch(5))).resolves.toBeUndefined();
    expect(state.committed).toEqual([]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(state.committed).toEqual([5]);
  });

  // A rebalance error has to reach kafkajs: it then rejoins, and the new generation reads the
  // batch again from the committed offset.
  it('lets a rebalance error of an immediate commit through to the consumer', async () => {
    const { state, batch } = consumer();
    const throttle = createCommitThrottle(silentLogger, 1000);
    state.failures = 1;
    state.failure = 'REBALANCE_IN_PROGRESS';
    await expect(throttle.commit(batch(5))).rejects.toMatchObject({ type: 'REBALANCE_IN_PROGRESS' });
  });

  // A timer that fired for a consumer that had stopped (kafkajs restarted it) used to stay set.
  // Timers run on a monotonic clock and the interval on the wall clock, so a batch can arrive when
  // the wall clock says the interval has not quite passed: its commit was then left to that dead
  // timer, and was never made.
  it('clears its timer when it fires for a stopped consumer, so later batches are committed', async () => {
    const first = await withOffset2Pending();
    first.state.running = false;
    await vi.advanceTimersByTimeAsync(1000);
    vi.setSystemTime(Date.now() - 5);
    const { state, batch } = consumer();
    state.committed.push(1);
    await first.throttle.commit(batch(7));
    await vi.advanceTimersByTimeAsync(2000);
    expect(state.committed).toEqual([1, 7]);
  });
});
