import type { EachBatchPayload, Kafka } from 'kafkajs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createHealth } from '../health.js';
import { silentLogger } from '../log.js';
import { enricherTopics } from '../wire/topics.js';
import { dueAt, startDelayForwarder } from './delay-forwarder.js';
import { createEnricherMetrics } from './enricher-metrics.js';
import { decodeFetchRequest, encodeFetchRequest, type FetchRequest } from '../wire/fetch-request.js';

const request: FetchRequest = { type: 'Contract', id: 'c1', eventId: 'e1', event: 'ContractCreated', receivedAt: 5, source: null };

describe('delayed requests', () => {
  it('carry their retry state through the wire format', () => {
    const retry = { reason: 'gone-unconfirmed', attempt: 1, since: 10, dueAt: 20, headVersion: 3 } as const;
    expect(decodeFetchRequest(encodeFetchRequest({ ...request, retry }).value).retry).toEqual(retry);
    expect(decodeFetchRequest(encodeFetchRequest(request).value).retry).toBeUndefined();
  });

  it('are due at their due time; a request without one, or one that cannot be read, at once', () => {
    expect(dueAt({ value: encodeFetchRequest({ ...request, retry: { reason: 'not-found-yet', attempt: 2, since: 1, dueAt: 1234 } }).value })).toBe(1234);
    expect(dueAt({ value: encodeFetchRequest(request).value })).toBe(0);
    expect(dueAt({ value: Buffer.from('not json') })).toBe(0);
  });

  it('a retry state this version did not write is dropped, not trusted', () => {
    const value = Buffer.from(JSON.stringify({ v: 1, ...request, retry: { reason: 'whatever', attempt: 1, since: 0, dueAt: 0 } }));
    expect(decodeFetchRequest(value).retry).toBeUndefined();
  });
});

/** A forwarder over a stand-in Kafka client; returns its eachBatch handler and what it committed. */
async function forwarderWithCommits(commit: () => Promise<void>) {
  let eachBatch: ((payload: EachBatchPayload) => Promise<void>) | undefined;
  const consumer = {
    events: { GROUP_JOIN: 'join', CRASH: 'crash' },
    on: () => undefined,
    connect: async () => undefined,
    subscribe: async () => undefined,
    run: async (options: { eachBatch: typeof eachBatch }) => void (eachBatch = options.eachBatch),
    disconnect: async () => undefined,
  };
  const producer = { connect: async () => undefined, send: async () => [], disconnect: async () => undefined };
  const kafka = { consumer: () => consumer, producer: () => producer } as unknown as Kafka;
  const forwarder = await startDelayForwarder({ kafka, log: silentLogger, metrics: createEnricherMetrics(new Registry()), health: createHealth(), internal: enricherTopics('unit'), groupId: 'g' });
  const resolved: string[] = [];
  const run = (offset: string) =>
    (eachBatch as (payload: EachBatchPayload) => Promise<void>)({
      batch: { topic: 'unit.enricher.delayed', partition: 0, messages: [{ offset, key: null, value: encodeFetchRequest(request).value }], lastOffset: () => offset },
      resolveOffset: (o: string) => void resolved.push(o),
      commitOffsetsIfNecessary: commit,
      heartbeat: async () => undefined,
      isRunning: () => true,
      isStale: () => false,
      pause: () => () => undefined,
    } as unknown as EachBatchPayload);
  return { run, resolved, stop: () => forwarder.stop() };
}

describe('the delay forwarder', () => {
  // kafkajs retries a failed batch in place from its last resolved offset: a batch resolved
  // before its commit failed was never read, forwarded or committed again, and the partition's
  // group stayed one batch behind for good (the drain waited on "every delayed reread forwarded").
  it('leaves a batch whose commit failed unresolved, so that kafkajs reads it again', async () => {
    const loading = Object.assign(new Error('The coordinator is loading'), { type: 'GROUP_LOAD_IN_PROGRESS', retriable: true });
    const f = await forwarderWithCommits(async () => {
      throw loading;
    });
    await expect(f.run('7')).rejects.toBe(loading);
    expect(f.resolved).toEqual([]);
    await f.stop();
  });

  it('resolves a batch once its offsets are committed', async () => {
    const f = await forwarderWithCommits(async () => undefined);
    await f.run('7');
    expect(f.resolved).toEqual(['7']);
    await f.stop();
  });
});

