import { describe, expect, it } from 'vitest';
import { createHealth } from '../health.js';
import type { Logger } from '../log.js';
import { createMetrics } from '../metrics.js';
import { livenessCondition, startStageWatch, type StageSample } from './stall-watchdog.js';
import { createWatchMetrics } from './watch-metrics.js';

function recordingLogger(): { log: Logger; lines: [string, string, Record<string, unknown> | undefined][] } {
  const lines: [string, string, Record<string, unknown> | undefined][] = [];
  const log: Logger = {
    debug: (msg, fields) => void lines.push(['debug', msg, fields]),
    info: (msg, fields) => void lines.push(['info', msg, fields]),
    warn: (msg, fields) => void lines.push(['warn', msg, fields]),
    error: (msg, fields) => void lines.push(['error', msg, fields]),
    child: () => log,
  };
  return { log, lines };
}

/** A watch on one stage whose samples the test sets, on a clock the test moves. */
function setUp(settings = { checkIntervalMs: 3_600_000, stallMs: 60_000, livenessMs: 30_000 }) {
  let clock = 1_000_000;
  let next: StageSample = { lag: 0, progressed: false, waitingFor: {} };
  let restarts = 0;
  const { log, lines } = recordingLogger();
  const health = createHealth();
  const registry = createMetrics();
  const watch = startStageWatch({ log, health, metrics: createWatchMetrics(registry), settings, now: () => clock });
  watch.watch({ stage: 'sink', sample: () => Promise.resolve(next), restart: () => Promise.resolve(void restarts++) });
  const stalledSeconds = async () => (await registry.getSingleMetric('billing_loader_stage_stalled_seconds')?.get())?.values.find((v) => v.labels.stage === 'sink')?.value;
  return {
    watch,
    health,
    lines,
    restarts: () => restarts,
    stalledSeconds,
    set: (sample: Partial<StageSample>) => void (next = { lag: 0, progressed: false, waitingFor: {}, ...sample }),
    advance: async (ms: number) => {
      clock += ms;
      await watch.check();
    },
  };
}

describe('stall watchdog', () => {
  it('counts stalled seconds only while there is lag and no progress', async () => {
    const w = setUp();
    await w.advance(10_000);
    expect(await w.stalledSeconds()).toBe(0);
    w.set({ lag: 5 });
    await w.advance(20_000);
    expect(await w.stalledSeconds()).toBe(20);
    await w.advance(10_000);
    expect(await w.stalledSeconds()).toBe(30);
    w.set({ lag: 5, progressed: true });
    await w.advance(1000);
    expect(await w.stalledSeconds()).toBe(0);
    w.watch.stop();
  });

  it('restarts a stalled stage once, logging what it waits for, then fails liveness if that did not help', async () => {
    const w = setUp();
    w.set({ lag: 7, waitingFor: { partitions: [{ partition: 3, committed: '10', end: '17' }] } });
    await w.advance(59_000);
    expect(w.restarts()).toBe(0);
    await w.advance(1000);
    expect(w.restarts()).toBe(1);
    expect(w.lines).toContainEqual(['error', 'stage stalled, restarting its consumers and producers', { stage: 'sink', stalledSeconds: 60, lag: 7, waitingFor: { partitions: [{ partition: 3, committed: '10', end: '17' }] } }]);
    await w.advance(29_000);
    expect(w.health.liveness().live).toBe(true);
    await w.advance(1000);
    expect(w.restarts()).toBe(1);
    expect(w.health.liveness()).toEqual({ live: false, failing: { [livenessCondition('sink')]: expect.stringContaining('stalled for 90 s with 7 records waiting') } });
    // Progress at last (the supervisor had not acted yet): live again, and the next stall starts afresh.
    w.set({ lag: 7, progressed: true });
    await w.advance(1000);
    expect(w.health.liveness().live).toBe(true);
    w.set({ lag: 7 });
    await w.advance(60_000);
    expect(w.restarts()).toBe(2);
    w.watch.stop();
  });

  it('never restarts with WATCHDOG_STALL_MS 0, but still shows the stall', async () => {
    const w = setUp({ checkIntervalMs: 3_600_000, stallMs: 0, livenessMs: 1 });
    w.set({ lag: 1 });
    await w.advance(600_000);
    await w.advance(600_000);
    expect(w.restarts()).toBe(0);
    expect(w.health.liveness().live).toBe(true);
    expect(await w.stalledSeconds()).toBe(1200);
    w.watch.stop();
  });

  it('keeps the last known lag when a check fails (the broker away)', async () => {
    const w = setUp();
    w.set({ lag: 3 });
    await w.advance(1000);
    let failing = true;
    w.watch.watch({ stage: 'router', sample: () => (failing ? Promise.reject(new Error('broker away')) : Promise.resolve({ lag: 0, progressed: false, waitingFor: {} })), restart: () => Promise.resolve() });
    await w.advance(61_000);
    expect(w.restarts()).toBe(1);
    failing = false;
    await w.advance(1000);
    w.watch.stop();
  });
});
