import type { EachBatchPayload } from 'kafkajs';
import type pg from 'pg';
import { Registry as MetricsRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createHealth } from '../health.js';
import type { CommitThrottle } from '../kafka/commit-throttle.js';
import type { DeadLetterWriter } from '../kafka/dead-letters.js';
import { silentLogger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { topicNames } from '../wire/topics.js';
import { createBatchHandler } from './batch-handler.js';
import { createSinkMetrics } from './sink-metrics.js';

const names = topicNames('unit');

/**
 * A handler whose database fails the first attempt, over a payload whose heartbeat answers as
 * `heartbeat` says. The sink's stop signal fires after a few heartbeats, so a handler that keeps
 * retrying ends too, and the test can tell what it did.
 */
function handlerWith(heartbeat: () => Promise<void>, state: { running: boolean; stale: boolean }) {
  const stopping = new AbortController();
  const seen = { heartbeats: 0, resolved: [] as string[], commits: 0, connects: 0 };
  const pool = {
    connect: async () => {
      seen.connects++;
      throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    },
  } as unknown as pg.Pool;
  const commits: CommitThrottle = { commit: async () => void seen.commits++, flush: async () => undefined };
  const handler = createBatchHandler({
    pool,
    registry: {} as Registry,
    deadLetters: { send: async () => undefined } as unknown as DeadLetterWriter,
    schema: 'unit',
    names,
    metrics: createSinkMetrics(new MetricsRegistry()),
    health: createHealth(),
    log: silentLogger,
    stopping: stopping.signal,
    commits,
  });
  const message = { offset: '4', key: null, value: Buffer.alloc(0), timestamp: '0', attributes: 0, headers: {} };
  const payload = {
    batch: { topic: names.webhooks, partition: 0, messages: [message], firstOffset: () => '4', offsetLag: () => '0' },
    resolveOffset: (offset: string) => void seen.resolved.push(offset),
    heartbeat: async () => {
      seen.heartbeats++;
      if (seen.heartbeats >= 3) stopping.abort();
      await heartbeat();
    },
    isRunning: () => state.running,
    isStale: () => state.stale,
  } as unknown as EachBatchPayload;
  return { run: () => handler(payload), seen, state };
}

describe('sink batch handler', () => {
  // kafkajs's heartbeat throws on every call during a rebalance; a retry loop that heartbeats
  // first and retries whatever it throws never ends, and kafkajs waits for every batch of a
  // fetch, so the whole sink stalled.
  it('gives a failing batch back to kafkajs when a retry meets a rebalance', async () => {
    const rebalance = Object.assign(new Error('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS', retriable: true });
    const { run, seen } = handlerWith(async () => {
      throw rebalance;
    }, { running: true, stale: false });
    await expect(run()).rejects.toBe(rebalance);
    expect(seen.heartbeats).toBe(1);
    expect(seen.resolved).toEqual([]);
    expect(seen.commits).toBe(0);
  });

  it('retries without a heartbeat once the consumer no longer owns the batch', async () => {
    const state = { running: true, stale: false };
    const { run, seen } = handlerWith(async () => undefined, state);
    const done = run();
    // The first attempt fails on the database; the partition is revoked before the retry.
    state.stale = true;
    await expect(done).resolves.toBeUndefined();
    expect(seen.connects).toBe(1);
    expect(seen.heartbeats).toBe(0);
    expect(seen.resolved).toEqual([]);
  });
});
