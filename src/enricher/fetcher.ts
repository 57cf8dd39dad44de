import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { errorMessage } from '../errors.js';
import type { Health } from '../health.js';
import { heartbeatWhile } from '../kafka/heartbeat-while.js';
import { readMessageLimits } from '../kafka/message-limits.js';
import type { TopicNames } from '../wire/topics.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { backoffDelayMs } from '../retry.js';
import { startSupervisedConsumer, type SupervisedConsumer } from '../kafka/supervised-consumer.js';
import { valueHash } from './canonical-hash.js';
import { createPartSizer, partEnd, type PartSizer } from './batch-parts.js';
import type { EnricherMetrics } from './enricher-metrics.js';
import type { EnricherTopics } from '../wire/topics.js';
import type { FetchRequest } from '../wire/fetch-request.js';
import type { StoredHead } from './head-store.js';
import { classifyReadFailure, requestedWaitMs, type ReadFailure, type ResourceReader } from './resource-reader.js';
import { parseBody, usablePrefetched, type RetryRules } from './read-decision.js';
import { groupRequests, planPart, type Pending, type ReadResult } from './part-plan.js';
import { createPartPublisher } from './part-publisher.js';
import { openHeadCache } from './head-cache.js';
import { PreparationOvertaken, createPartitionOwner } from './partition-owner.js';
import { allPartitions } from '../kafka/hanging-transactions.js';
import { watchHiddenCommits } from './hidden-commit-watch.js';
import type { StageWatch } from '../watch/stall-watchdog.js';
import { watchConsumerStage } from '../watch/consumer-stage-watch.js';
import { createReadThrottle } from './read-throttle.js';
import { requestShare } from '../billing-api/rate-limits.js';
import { resourceKey } from '../billing-api/resource-types.js';

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
  /** Where the local copy of the heads lives (ENRICHER_STATE_DIR). */
  stateDir: string;
  /** The process's stall watchdog: lag gauges, stall gauge, restarts. */
  watch?: StageWatch;
  /** Partitions of the request topic: an instance's share of the request budget is the fraction it owns. Unknown: no share is set. */
  requestPartitions?: number;
  /** Escalation settings objects: read at all, and at most once per id per `intervalMs`. Default not read. */
  escalationSettings?: { read: boolean; intervalMs: number };
  /** How long a commit may stay hidden behind a transaction left open (ENRICHER_HANGING_TRANSACTION_MS), in ms. Default 90000. */
  hangingTransactionMs?: number;
}

const DEFAULT_RETRY_RULES: RetryRules = { notFoundWindowMs: 300_000, goneConfirmMs: 10_000, unreadableAttempts: 5, baseDelayMs: 1000, maxDelayMs: 60_000 };

class PartitionPaused extends Error {}

/** With ENRICHER_COALESCE_MS: a fetch of the request topic returns early once it holds about 100 requests. */
const COALESCE_MIN_BYTES = 32 * 1024;

/**
 * The fetcher: works the request partitions its owner holds (partition-owner.ts: fencing, one
 * transactional producer per partition, heads). Per part of a batch: one fetch per resource
 * (coalescing every request of the part, all received before the fetch starts), the plan of what
 * the reads make (part-plan.ts), and one transaction holding the new snapshots, their heads,
 * follow-up requests, dead letters and the consumer offsets (part-publisher.ts). Nothing is
 * published unless all of it is.
 */
export async function startFetcher(deps: FetcherDeps): Promise<{ stop(): Promise<void> }> {
  const { kafka, log, metrics } = deps;
  // Every topic a fetcher transaction writes (part-publisher.ts): their limits, and the partitions
  // each preparation closes any hanging transaction of its transactional ids in.
  const written = [deps.topics.snapshots, deps.internal.heads, deps.internal.requests, deps.internal.delayed, deps.topics.webhooksDlq];
  const limitOf = await readMessageLimits(kafka, written);
  const coalesceMs = deps.coalesceMs ?? 0;
  const retryRules: RetryRules = { ...DEFAULT_RETRY_RULES, ...deps.retryRules };
  // Filled below, once the supervisor has made the first instance; handlers run only after.
  const supervisor: { running?: SupervisedConsumer } = {};
  const consumer = (): Consumer => (supervisor.running as SupervisedConsumer).current();
  const cache = openHeadCache(deps.stateDir, deps.internal.heads);
  const owner = createPartitionOwner({ kafka, log, internal: deps.internal, cache, metrics, closing: () => allPartitions(kafka, written) });
  const publish = createPartPublisher({ ...deps, limitOf, onFailure: owner.reset });
  const hiddenCommits = watchHiddenCommits({
    kafka,
    log,
    metrics,
    hiddenAfterMs: deps.hangingTransactionMs ?? 90_000,
    // Prepared at once, not at the next batch: the hidden partition may be one this fetcher reads.
    closeTransactions: async () => {
      await owner.reset();
      await owner.prepare(owner.generation()).catch((err: unknown) => {
        if (!(err instanceof PreparationOvertaken)) log.warn('fencing and head restore failed, retrying at the next batch', { err: errorMessage(err) });
      });
    },
  });
  const failures = new Map<number, number>();
  const resumeTimers = new Set<NodeJS.Timeout>();
  const sessionTimeoutMs = deps.sessionTimeoutMs ?? 30_000;
  const heartbeatIntervalMs = Math.max(100, Math.floor(sessionTimeoutMs / 10));
  const partSizers = new Map<number, PartSizer>();
  const escalationSettings = deps.escalationSettings ?? { read: false, intervalMs: 0 };
  const throttle = createReadThrottle(escalationSettings.intervalMs);

  /** One read for all pending requests of a resource; a list page's body instead only where usablePrefetched allows it. */
  const readResource = async (pending: Pending[], head: StoredHead | undefined): Promise<ReadResult> => {
    const requests = pending.map((p) => p.request);
    const first = requests[0] as FetchRequest;
    // Without a configured path none is read, not even a request queued before (docs/ARCHITECTURE.md).
    if (first.type === 'PaymentEscalationProcess' && !(escalationSettings.read && throttle.admit(resourceKey(first.type, first.id), Date.now(), head?.fetchedAt))) {
      metrics.fetches.inc({ type: first.type, outcome: 'throttled' });
      return { kind: 'skipped' };
    }
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
    const gen = owner.generation();
    try {
      await heartbeatWhile(payload.heartbeat, heartbeatIntervalMs, owner.prepare(gen), {
        afterMs: sessionTimeoutMs,
        report: (elapsedMs) => log.warn('partition preparation still running', { partition: batch.partition, generation: gen, stage: owner.preparationStage(), elapsedMs }),
      });
    } catch (err) {
      // Nothing resolved: the batch is fetched again and the next call prepares anew.
      if (err instanceof PreparationOvertaken) return;
      throw err;
    }
    let sizer = partSizers.get(batch.partition);
    if (!sizer) partSizers.set(batch.partition, (sizer = createPartSizer(sessionTimeoutMs / 6)));
    for (let start = 0; start < batch.messages.length; ) {
      if (!payload.isRunning() || payload.isStale() || gen !== owner.generation()) return;
      const end = partEnd(batch.messages, start, sizer.size());
      const started = Date.now();
      // The last part covers the batch to its last offset: past a trailing transaction marker too.
      const upTo = end === batch.messages.length ? batch.lastOffset() : (batch.messages[end - 1] as KafkaMessage).offset;
      const progress = { stage: 'starting' };
      const firstOffset = (batch.messages[start] as KafkaMessage).offset;
      const resources = await heartbeatWhile(payload.heartbeat, heartbeatIntervalMs, handlePart(payload, batch.messages.slice(start, end), upTo, gen, progress), {
        afterMs: sessionTimeoutMs,
        report: (elapsedMs) => log.warn('fetcher part still running', { partition: batch.partition, firstOffset, lastOffset: upTo, stage: progress.stage, elapsedMs }),
      });
      if (resources === undefined) return; // reassigned meanwhile
      sizer.record(resources, Date.now() - started);
      start = end;
    }
  };

  /** One part of a batch: its reads, versions and offsets in one transaction. Returns how many resources it named, or undefined if the partition was reassigned meanwhile. */
  const handlePart = async (payload: EachBatchPayload, messages: KafkaMessage[], lastOffset: string, gen: number, progress: { stage: string }): Promise<number | undefined> => {
    const { batch } = payload;
    const owned = owner.partition(batch.partition, gen);
    if (!owned) return undefined; // reassigned meanwhile
    const firstOffset = (messages[0] as KafkaMessage).offset;

    const source = { topic: batch.topic, partition: batch.partition, dlqTopic: deps.topics.webhooksDlq };
    metrics.requests.inc(messages.length);
    const { groups, letters: invalid } = groupRequests(messages, source);
    // The part's heads, read once from the local cache: only the resources it names are in memory.
    const partitionHeads = new Map<string, StoredHead>();
    for (const [key] of groups) {
      const head = owned.heads.get(key);
      if (head) partitionHeads.set(key, head);
    }

    // All requests of this part were received before this point, so one fetch per resource,
    // started now, is fresh for every one of them (docs/CONTRACT.md property 2).
    progress.stage = 'reading';
    const results = await Promise.all(groups.map(([key, pending]) => readResource(pending, partitionHeads.get(key))));
    const failed = results.find((r): r is Extract<ReadResult, { kind: 'failed' }> => r.kind === 'failed' && r.failure !== 'rejected');
    if (failed) {
      pausePartition(payload, failed.failure, failed.err, firstOffset);
      throw new PartitionPaused();
    }
    failures.delete(batch.partition);
    deps.health.setCondition('billing-api', undefined);

    const decidedAt = Date.now();
    const planned = planPart({ groups, results, heads: partitionHeads, rules: retryRules, decidedAt, source, readEscalationSettings: escalationSettings.read });
    metrics.coalesced.inc(planned.coalesced);
    for (const r of planned.rereads) {
      metrics.rereads.inc({ type: r.type, reason: r.retry.reason });
      log.info('resource to be read again later', { resourceType: r.type, resourceId: r.id, reason: r.retry.reason, attempt: r.retry.attempt, dueInMs: r.retry.dueAt - decidedAt });
    }
    for (const type of planned.unchanged) metrics.unchanged.inc({ type });
    for (const v of planned.versions) metrics.versions.inc({ type: v.type, deleted: String(v.deleted) });
    const published = await publish(owned.producer, { plan: planned, groups, invalid, source, lastOffset }, () => gen === owner.generation(), (stage) => (progress.stage = stage));
    if (!published) return undefined;
    const { plan, letters } = published;
    hiddenCommits.committed(published.written);
    progress.stage = 'caching heads';
    // Awaited: the next part of this partition must see these heads.
    await owned.committed(plan.headRecords.map((r) => ({ key: r.key as string, value: r.value as Buffer })), published.headsEnd);
    metrics.deadLettered(letters);
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


  // A partition paused while the API is unavailable is not counted as stalled. A restart drops the
  // transactional producers (the next batch prepares anew: fence, barrier, catch-up) and the consumer.
  const watched = watchConsumerStage(deps.watch, {
    stage: 'fetcher',
    kafka,
    groupId: deps.groupId,
    async restart() {
      await Promise.all([owner.reset().catch((err: unknown) => log.warn('closing the partition producers failed', { err: errorMessage(err) })), supervisor.running?.restart()]);
    },
  });
  supervisor.running = await startSupervisedConsumer({
    name: 'enricher.fetcher',
    create: () =>
      watched.attach(kafka.consumer({
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
      })),
    async start(c) {
      owner.onGroupJoin(c);
      // BILLING_API_REQUESTS_PER_SECOND is the deployment's total: take the share of the partitions owned.
      c.on(c.events.GROUP_JOIN, ({ payload }) => {
        const owned = payload.memberAssignment[deps.internal.requests]?.length ?? 0;
        const share = requestShare(owned, deps.requestPartitions ?? 0);
        if (share === undefined || !deps.reader.setRequestShare) return;
        deps.reader.setRequestShare(share);
        log.info('request budget share set', { partitions: owned, of: deps.requestPartitions, share });
      });
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
      await hiddenCommits.stop();
      await watched.stop();
      for (const timer of resumeTimers) clearTimeout(timer);
      resumeTimers.clear();
      await supervisor.running?.stop();
      await owner.close();
      await cache.close();
    },
  };
}
