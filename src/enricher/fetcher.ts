import type { Consumer, EachBatchPayload, Kafka, KafkaMessage, Producer } from 'kafkajs';
import { LoaderError, errorMessage } from '../errors.js';
import type { Health } from '../health.js';
import { createTransactionalProducer } from '../kafka/producers.js';
import { fencePreviousOwner } from '../kafka/fence-previous-owner.js';
import { heartbeatWhile } from '../kafka/heartbeat-while.js';
import { readMessageLimits } from '../kafka/message-limits.js';
import { partitionBySize, splitSends } from '../kafka/split-sends.js';
import type { TopicNames } from '../wire/topics.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { backoffDelayMs } from '../retry.js';
import { createDeadLetterEncoder } from '../kafka/dead-letters.js';
import { startSupervisedConsumer, type SupervisedConsumer } from '../kafka/supervised-consumer.js';
import { valueHash } from './canonical-hash.js';
import { createPartSizer, partEnd, type PartSizer } from './batch-parts.js';
import type { EnricherMetrics } from './enricher-metrics.js';
import type { EnricherTopics } from '../wire/topics.js';
import type { FetchRequest } from '../wire/fetch-request.js';
import { restoreHeads, type StoredHead } from './head-store.js';
import { classifyReadFailure, requestedWaitMs, type ReadFailure, type ResourceReader } from './resource-reader.js';
import { parseBody, usablePrefetched, type RetryRules } from './read-decision.js';
import { groupRequests, holdBackTooLarge, planPart, type Pending, type ReadResult } from './part-plan.js';

export interface FetcherDeps {
  kafka: Kafka;
  registry: Registry;
  reader: ResourceReader;
  log: Logger;
  metrics: EnricherMetrics;
  health: Health;
  topics: TopicNames;
  internal: EnricherTopics;
  groupId: string;
  snapshotSchemaId: number;
  /** Longest pause of a partition while the API is unavailable, in ms. Default 30000. */
  maxPauseMs?: number;
  /** Longest wait for more requests before a batch is read (ENRICHER_COALESCE_MS), in ms. Default 0. */
  coalesceMs?: number;
  /** When a read is read again later, and when it is given up (read-decision.ts). */
  retryRules?: Partial<RetryRules>;
  /** The consumer group's session timeout, in ms (heartbeats every tenth of it; parts of a batch aim at a sixth). Default 30000. */
  sessionTimeoutMs?: number;
}

const DEFAULT_RETRY_RULES: RetryRules = { notFoundWindowMs: 300_000, goneConfirmMs: 10_000, unreadableAttempts: 5, baseDelayMs: 1000, maxDelayMs: 60_000 };

class PartitionPaused extends Error {}

/** With ENRICHER_COALESCE_MS: a fetch of the request topic returns early once it holds about 100 requests. */
const COALESCE_MIN_BYTES = 32 * 1024;

/**
 * Owns the resources of the request partitions assigned to it (DESIGN.md property 4). Per
 * assignment (generation) and partition: a transactional producer whose id is bound to the
 * partition, connected and then explicitly fenced (an empty transaction: whoever owned the
 * partition before has its open transaction aborted and can commit nothing more); then the
 * partition's heads are restored, read-committed, from the heads topic.
 * Per batch: one fetch per resource (coalescing every request of the batch, all received before
 * the fetch starts), and one transaction holding the new snapshots, their heads, follow-up
 * requests, dead letters and the consumer offsets. Nothing is published unless all of it is.
 */
export async function startFetcher(deps: FetcherDeps): Promise<{ stop(): Promise<void> }> {
  const { kafka, log, metrics } = deps;
  const limitOf = await readMessageLimits(kafka, [deps.topics.snapshots, deps.internal.heads, deps.internal.requests, deps.internal.delayed, deps.topics.webhooksDlq]);
  const coalesceMs = deps.coalesceMs ?? 0;
  const retryRules: RetryRules = { ...DEFAULT_RETRY_RULES, ...deps.retryRules };
  // Filled below, once the supervisor has made the first instance; handlers run only after.
  const supervisor: { running?: SupervisedConsumer } = {};
  const consumer = (): Consumer => (supervisor.running as SupervisedConsumer).current();
  let generation = 0;
  let assigned: number[] = [];
  let ready: Promise<void> | undefined;
  const producers = new Map<number, Producer>();
  const heads = new Map<number, Map<string, StoredHead>>();
  const failures = new Map<number, number>();
  const resumeTimers = new Set<NodeJS.Timeout>();
  const sessionTimeoutMs = deps.sessionTimeoutMs ?? 30_000;
  const heartbeatIntervalMs = Math.max(100, Math.floor(sessionTimeoutMs / 10));
  const partSizers = new Map<number, PartSizer>();

  const closeProducers = async () => {
    const all = [...producers.values()];
    producers.clear();
    await Promise.allSettled(all.map((p) => p.disconnect()));
  };

  const onGroupJoin = (c: Consumer) =>
    c.on(c.events.GROUP_JOIN, ({ payload }) => {
      // Every (re)join may follow a period in which another instance owned our partitions:
      // forget all heads and producers, and fence + restore again before the next batch.
      generation++;
      assigned = payload.memberAssignment[deps.internal.requests] ?? [];
      ready = undefined;
      heads.clear();
      void closeProducers();
      log.info('partitions assigned', { partitions: assigned, generation });
      // Fence at once, not at the first batch: a crashed owner's open transactions (which also
      // wrote follow-up requests into request partitions) hide everything after them from a
      // read-committed consumer, so the first batch would never come and the partitions would
      // wait for the transaction timeout. Fencing with our producers aborts those transactions.
      prepare(generation).catch((err: unknown) => log.warn('fencing and head restore failed, retrying at the next batch', { err: errorMessage(err) }));
    });

  const prepare = (gen: number): Promise<void> => {
    ready ??= (async () => {
      const partitions = [...assigned];
      await Promise.all(
        partitions.map(async (p) => {
          const producer = createTransactionalProducer(kafka, `${deps.internal.requests}.fetcher.${p}`);
          await producer.connect();
          producers.set(p, producer);
          // Connecting fences nobody in kafkajs; this does (see fencePreviousOwner), before the
          // restore below, which an open transaction of the previous owner would hold up.
          await fencePreviousOwner(producer);
        }),
      );
      const restored = await restoreHeads(kafka, deps.internal.heads, partitions);
      if (gen !== generation) return;
      for (const [p, h] of restored) heads.set(p, h);
      log.info('heads restored', { partitions, resources: [...restored.values()].reduce((n, h) => n + h.size, 0) });
    })();
    const current = ready;
    current.catch(() => {
      if (ready === current) ready = undefined;
    });
    return current;
  };

  /** One read for all pending requests of a resource; a list page's body instead only where usablePrefetched allows it. */
  const readResource = async (pending: Pending[], head: StoredHead | undefined): Promise<ReadResult> => {
    const requests = pending.map((p) => p.request);
    const first = requests[0] as FetchRequest;
    const prefetched = usablePrefetched(requests, head);
    if (prefetched) {
      metrics.fetches.inc({ type: first.type, outcome: 'prefetched' });
      return found(prefetched.body, prefetched.fetchedAt);
    }
    try {
      const result = await deps.reader.getResource(first.type, first.id);
      const fetchedAt = Date.now();
      metrics.fetches.inc({ type: first.type, outcome: result.kind });
      return result.kind === 'found' ? found(result.body, fetchedAt) : { kind: 'gone', fetchedAt };
    } catch (err) {
      const failure = classifyReadFailure(err);
      if (failure === undefined) throw err;
      return { kind: 'failed', failure, err };
    }
  };

  /** A body is parsed once: for its hash, and for a contract's references. */
  const found = (body: string, fetchedAt: number): ReadResult => {
    const read = parseBody(body);
    if (!read.ok) return { kind: 'unreadable', problem: read.problem, fetchedAt };
    return { kind: 'found', body, parsed: read.parsed, hash: valueHash(read.parsed), fetchedAt };
  };

  const pausePartition = (payload: EachBatchPayload, failure: ReadFailure, err: unknown, fromOffset: string) => {
    const { batch } = payload;
    const attempt = (failures.get(batch.partition) ?? 0) + 1;
    failures.set(batch.partition, attempt);
    const maxPauseMs = deps.maxPauseMs ?? 30_000;
    const delay = failure === 'credentials' ? maxPauseMs : (requestedWaitMs(err) ?? backoffDelayMs(attempt, 500, maxPauseMs));
    metrics.pauses.inc({ reason: failure });
    if (failure === 'credentials') deps.health.setCondition('billing-api', `credentials refused: ${errorMessage(err)}`);
    log.warn('billing API unavailable, pausing partition', { partition: batch.partition, failure, delayMs: delay, attempt, err: errorMessage(err) });
    // Nothing of this part of the batch was published or committed: read it again from its first offset.
    const c = consumer();
    c.seek({ topic: batch.topic, partition: batch.partition, offset: fromOffset });
    c.pause([{ topic: batch.topic, partitions: [batch.partition] }]);
    const timer = setTimeout(() => {
      resumeTimers.delete(timer);
      try {
        c.resume([{ topic: batch.topic, partitions: [batch.partition] }]);
      } catch (err) {
        // That consumer stopped meanwhile (shutdown, or the supervisor replaced it after a
        // crash): its successor starts with nothing paused. Thrown from a timer, this would
        // have been an uncaught exception.
        log.debug('partition not resumed: its consumer is gone', { partition: batch.partition, err: errorMessage(err) });
      }
    }, delay);
    timer.unref();
    resumeTimers.add(timer);
  };

  /**
   * A batch is taken in parts, each read, versioned and committed in its own transaction, sized
   * to take about a sixth of the session timeout at the rate the API gave the last part. After
   * an outage, a replay or a burst a batch names thousands of resources, minutes of reads at the
   * default budget: as one transaction it outlasted the session, the member was thrown out, the
   * batch was read again, and the same reads repeated forever. Between parts the offsets move,
   * a stop or a rebalance waits for one part at most, and heartbeats go out during each part.
   */
  const handleBatch = async (payload: EachBatchPayload) => {
    const { batch } = payload;
    if (batch.isEmpty()) return;
    const gen = generation;
    await heartbeatWhile(payload.heartbeat, heartbeatIntervalMs, prepare(gen));
    metrics.lag.set({ partition: String(batch.partition) }, Number(batch.offsetLag()));
    let sizer = partSizers.get(batch.partition);
    if (!sizer) partSizers.set(batch.partition, (sizer = createPartSizer(sessionTimeoutMs / 6)));
    for (let start = 0; start < batch.messages.length; ) {
      if (!payload.isRunning() || payload.isStale() || gen !== generation) return;
      const end = partEnd(batch.messages, start, sizer.size());
      const started = Date.now();
      // The last part covers the batch to its last offset: past a trailing transaction marker too.
      const upTo = end === batch.messages.length ? batch.lastOffset() : (batch.messages[end - 1] as KafkaMessage).offset;
      const resources = await heartbeatWhile(payload.heartbeat, heartbeatIntervalMs, handlePart(payload, batch.messages.slice(start, end), upTo, gen));
      if (resources === undefined) return; // reassigned meanwhile
      sizer.record(resources, Date.now() - started);
      start = end;
    }
  };

  /** One part of a batch: its reads, versions and offsets in one transaction. Returns how many resources it named, or undefined if the partition was reassigned meanwhile. */
  const handlePart = async (payload: EachBatchPayload, messages: KafkaMessage[], lastOffset: string, gen: number): Promise<number | undefined> => {
    const { batch } = payload;
    const producer = producers.get(batch.partition);
    const partitionHeads = heads.get(batch.partition);
    if (gen !== generation || !producer || !partitionHeads) return undefined; // reassigned meanwhile
    const firstOffset = (messages[0] as KafkaMessage).offset;

    const source = { topic: batch.topic, partition: batch.partition, dlqTopic: deps.topics.webhooksDlq };
    metrics.requests.inc(messages.length);
    const { groups, letters: invalid } = groupRequests(messages, source);

    // All requests of this part were received before this point, so one fetch per resource,
    // started now, is fresh for every one of them (DESIGN.md property 2).
    const results = await Promise.all(groups.map(([key, pending]) => readResource(pending, partitionHeads.get(key))));
    const failed = results.find((r): r is Extract<ReadResult, { kind: 'failed' }> => r.kind === 'failed' && r.failure !== 'rejected');
    if (failed) {
      pausePartition(payload, failed.failure, failed.err, firstOffset);
      throw new PartitionPaused();
    }
    failures.delete(batch.partition);
    deps.health.setCondition('billing-api', undefined);

    const decidedAt = Date.now();
    const planned = planPart({ groups, results, heads: partitionHeads, rules: retryRules, decidedAt, source });
    metrics.coalesced.inc(planned.coalesced);
    for (const r of planned.rereads) {
      metrics.rereads.inc({ type: r.type, reason: r.retry.reason });
      log.info('resource to be read again later', { resourceType: r.type, resourceId: r.id, reason: r.retry.reason, attempt: r.retry.attempt, dueInMs: r.retry.dueAt - decidedAt });
    }
    for (const type of planned.unchanged) metrics.unchanged.inc({ type });
    for (const v of planned.versions) metrics.versions.inc({ type: v.type, deleted: String(v.deleted) });
    const encodedSnapshots = await Promise.all(planned.snapshots.map(async (m) => ({ key: m.key, value: await deps.registry.encode(deps.snapshotSchemaId, m.value) })));
    const { publishable, tooLarge } = partitionBySize(encodedSnapshots, limitOf(deps.topics.snapshots));
    const { plan } = holdBackTooLarge(planned, groups, tooLarge.map((m) => ({ key: m.key, bytes: m.value.length })), { topic: deps.topics.snapshots, maxBytes: limitOf(deps.topics.snapshots) }, source);
    const letters = [...invalid, ...plan.letters];
    const encodedLetters = letters.length > 0 ? await encodeDeadLetters(letters) : [];

    if (gen !== generation) return undefined;
    const transaction = await producer.transaction();
    try {
      const topicMessages = [
        { topic: deps.topics.snapshots, messages: publishable },
        { topic: deps.internal.heads, messages: plan.headRecords },
        { topic: deps.internal.requests, messages: plan.followUps },
        { topic: deps.internal.delayed, messages: plan.delayed },
        ...encodedLetters,
      ].filter((t) => t.messages.length > 0);
      // Snapshots carry whole bodies: one send of a big part could exceed the largest record
      // batch a partition accepts. Several sends in one transaction are still all or nothing.
      for (const send of splitSends(topicMessages, limitOf)) await transaction.sendBatch({ topicMessages: send, acks: -1 });
      await transaction.sendOffsets({
        consumerGroupId: deps.groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(lastOffset) + 1n).toString() }] }],
      });
      await transaction.commit();
    } catch (err) {
      await transaction.abort().catch(() => undefined);
      // The producer may be unusable now (fenced, or its sequence state lost in a broker
      // restart). Start over as after a rebalance: new producers (fencing again), heads restored
      // again; the retriable error makes kafkajs restart the consumer from the committed offsets.
      ready = undefined;
      heads.clear();
      await closeProducers();
      throw new LoaderError(`snapshot transaction failed, batch will be read again: ${errorMessage(err)}`, { retriable: true, context: { topic: batch.topic, partition: batch.partition } });
    }
    for (const [key, head] of plan.heads) partitionHeads.set(key, head);
    if (letters.length > 0) metrics.deadLetters.inc({ topic: deps.topics.webhooksDlq }, letters.length);
    for (const g of plan.givenUp) {
      metrics.givenUp.inc({ type: g.type, reason: g.reason }, g.count);
      log.warn('resource given up after rereads, request dead-lettered', { resourceType: g.type, reason: g.reason, requests: g.count });
    }
    const now = Date.now();
    const rereads = new Set(plan.rereads.map((r) => r.key));
    for (const [key, pending] of groups) if (!rereads.has(key)) for (const p of pending) if (p.request.eventId) metrics.freshness.observe((now - p.request.receivedAt) / 1000);
    payload.resolveOffset(lastOffset);
    return groups.length;
  };

  // Dead letters ride in the batch's transaction: published exactly when the offsets move past them.
  const encodeDeadLetters = createDeadLetterEncoder(deps.registry, 'enricher');

  supervisor.running = await startSupervisedConsumer({
    name: 'enricher.fetcher',
    create: () =>
      kafka.consumer({
        groupId: deps.groupId,
        readUncommitted: false,
        sessionTimeout: sessionTimeoutMs,
        rebalanceTimeout: Math.max(60_000, sessionTimeoutMs),
        heartbeatInterval: heartbeatIntervalMs,
        // The broker holds each fetch until COALESCE_MIN_BYTES are there or the wait is over:
        // requests for one resource arriving close together (a signup's webhooks, a duplicate
        // burst) land in one batch and share one fetch. A busy load fills it sooner, a backlog
        // at once, so the wait shrinks as the load grows.
        ...(coalesceMs > 0 ? { minBytes: COALESCE_MIN_BYTES, maxWaitTimeInMs: coalesceMs } : {}),
      }),
    async start(c) {
      onGroupJoin(c);
      await c.connect();
      await c.subscribe({ topic: deps.internal.requests, fromBeginning: true });
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 6,
        eachBatch: async (payload) => {
          try {
            await handleBatch(payload);
          } catch (err) {
            if (err instanceof PartitionPaused) return; // seeked back and paused: not a consumer failure
            throw err;
          }
        },
      });
    },
    log,
    health: deps.health,
  });

  return {
    async stop() {
      for (const timer of resumeTimers) clearTimeout(timer);
      resumeTimers.clear();
      await supervisor.running?.stop();
      await closeProducers();
    },
  };
}
