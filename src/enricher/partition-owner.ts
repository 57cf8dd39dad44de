import type { Consumer, Kafka, Producer } from 'kafkajs';
import { errorMessage } from '../errors.js';
import { fencePreviousOwner } from '../kafka/fence-previous-owner.js';
import type { TopicPartitions } from '../kafka/hanging-transactions.js';
import { createTransactionalProducer } from '../kafka/producers.js';
import type { Logger } from '../log.js';
import type { EnricherTopics } from '../wire/topics.js';
import type { EnricherMetrics } from './enricher-metrics.js';
import type { HeadCache, PartitionHeadCache } from './head-cache.js';
import { catchUpHeads } from './head-catch-up.js';
import { writeRestoreBarrier, type RestoreBarrier } from './head-store.js';

export interface PartitionOwnerDeps {
  kafka: Kafka;
  log: Logger;
  internal: EnricherTopics;
  /** The local copy of the heads topic (head-cache.ts). */
  cache: HeadCache;
  metrics: Pick<EnricherMetrics, 'headsRestored'>;
  /**
   * Every partition of the topics the fetcher's transactions write: each restore barrier's
   * transaction closes whatever its transactional id left open in them (hanging-transactions.ts).
   */
  closing: () => Promise<TopicPartitions[]>;
}

/** What the owner holds for one request partition while it owns it. */
export interface OwnedPartition {
  producer: Producer;
  /** The partition's heads, read from the local cache, caught up with the heads topic. */
  heads: Pick<PartitionHeadCache, 'get'>;
  /**
   * Records the heads of a transaction that committed in the cache, unless the partition was
   * reassigned or reset meanwhile; with `end` (where the transaction's head records ended in the
   * heads partition) the cache's mark moves there too.
   */
  committed(records: { key: string; value: Buffer }[], end?: { partition: number; offset: string }): Promise<void>;
}

/**
 * Owns the resources of the request partitions assigned to it (docs/CONTRACT.md property 4). Per
 * assignment (generation) and partition: a transactional producer whose id is bound to the
 * partition, connected and then explicitly fenced (an empty transaction: whoever owned the
 * partition before has its open transaction aborted and can commit nothing more); then the
 * partition's local head cache is caught up, read-committed, with the heads topic: from where it
 * was left, or in full when it is empty or not to be trusted (head-catch-up.ts).
 */
export function createPartitionOwner(deps: PartitionOwnerDeps) {
  const { kafka, log } = deps;
  let generation = 0;
  let assigned: number[] = [];
  let ready: Promise<void> | undefined;
  const producers = new Map<number, Producer>();
  /** Partitions whose cache is caught up in the current generation. */
  const caughtUp = new Set<number>();
  // Bumped by every group join and every reset. A cache write of an earlier epoch could land
  // after a later catch-up, and a preparation started before one installs nothing: without it,
  // a preparation overtaken by a reset (two partitions' transactions failing together in a
  // broker restart) still installed its producers, which a later preparation had fenced, and
  // its heads, read before transactions that committed meanwhile: versions numbered again from
  // stale heads.
  let epoch = 0;
  // Preparations run one at a time, and a join or a reset cancels the one running: it stops at its
  // next step (after any await, and inside the catch-up before it applies records or writes the
  // mark), and the next one starts only once it has ended, its fences included. Two that
  // overlapped fenced each other's producers in either order per partition, and the older one's
  // catch-up moved the shared mark past the newer one's barrier: the newer catch-up then waited
  // for a barrier it had already passed, forever, and every later preparation behind it.
  let preparations: Promise<unknown> = Promise.resolve();
  let cancel = new AbortController();
  const cancelPreparation = () => {
    cancel.abort(new PreparationOvertaken());
    cancel = new AbortController();
  };
  // A stop can finish a rebalance on its way out (kafkajs completes a join in progress before it
  // leaves): a join or a prepare after close would connect producers and read heads that nothing
  // closes any more, and the process would never exit.
  let closed = false;
  // What the preparation in progress is waiting for (reported when it takes long).
  let stage = 'idle';

  const closeProducers = async () => {
    const all = [...producers.values()];
    producers.clear();
    await Promise.allSettled(all.map((p) => p.disconnect()));
  };

  const run = async (gen: number, started: number, signal: AbortSignal): Promise<void> => {
    // Only the preparation that is still current reports what it waits for.
    const setStage = (next: string) => {
      if (!signal.aborted) stage = next;
    };
    const check = () => {
      if (closed) throw new Error('partition owner closed');
      // An overtaken preparation must not fence the producers of the one that overtook it.
      if (signal.aborted || started !== epoch) throw new PreparationOvertaken();
    };
    check();
    const partitions = [...assigned];
    const created = new Map<number, Producer>();
    const barriers = new Map<number, RestoreBarrier>();
    try {
      setStage('listing the partitions to close');
      const closing = await deps.closing();
      check();
      // Settled, not all: after one partition failed, the others' fences must have ended
      // before the next preparation starts, or a late one fences that preparation's producers.
      const fenced = await Promise.allSettled(
        partitions.map(async (p) => {
          const producer = createTransactionalProducer(kafka, `${deps.internal.requests}.fetcher.${p}`);
          created.set(p, producer);
          setStage('connecting producers');
          await producer.connect();
          check();
          // Connecting fences nobody in kafkajs; this does (see fencePreviousOwner), before the
          // catch-up below, which an open transaction of the previous owner would hold up.
          setStage('fencing previous owners');
          await fencePreviousOwner(producer);
          check();
          setStage('writing restore barriers');
          // The catch-up reads up to this barrier, not to the last stable offset (read-to-end.ts).
          barriers.set(p, await writeRestoreBarrier(producer, deps.internal.heads, p, closing));
        }),
      );
      const failed = fenced.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      check();
      const began = Date.now();
      setStage('catching up heads');
      const caught = await catchUpHeads(kafka, deps.internal.heads, partitions, deps.cache, barriers, { signal });
      for (const c of caught) deps.metrics.headsRestored.inc({ mode: c.full ? 'full' : 'resumed' }, c.records);
      check();
      if (gen !== generation) throw new PreparationOvertaken();
      for (const [p, producer] of created) producers.set(p, producer);
      for (const p of partitions) caughtUp.add(p);
      setStage('done');
      log.info('heads restored', { partitions, fromOffsets: caught.map((c) => `${c.partition}:${c.from}${c.full ? ' (full)' : ''}`), records: caught.reduce((n, c) => n + c.records, 0), ms: Date.now() - began });
    } catch (err) {
      await Promise.allSettled([...created.values()].map((producer) => producer.disconnect()));
      throw err;
    }
  };

  const prepare = (gen: number): Promise<void> => {
    if (!ready) {
      const started = epoch;
      const { signal } = cancel;
      stage = WAITING_FOR_PREVIOUS;
      const current = preparations.catch(() => undefined).then(() => run(gen, started, signal));
      ready = current;
      preparations = current;
      current.catch(() => {
        if (ready === current) ready = undefined;
      });
    }
    return ready;
  };

  return {
    /** The current assignment's number: work started under an older one is dropped. */
    generation: () => generation,

    /** What the latest preparation is (or was last) waiting for. */
    preparationStage: () => stage,

    onGroupJoin: (c: Consumer) =>
      c.on(c.events.GROUP_JOIN, ({ payload }) => {
        if (closed) return;
        // Every (re)join may follow a period in which another instance owned our partitions:
        // forget all heads and producers, and fence + restore again before the next batch.
        generation++;
        epoch++;
        cancelPreparation();
        assigned = payload.memberAssignment[deps.internal.requests] ?? [];
        ready = undefined;
        caughtUp.clear();
        void closeProducers();
        log.info('partitions assigned', { partitions: assigned, generation });
        // Fence at once, not at the first batch: a crashed owner's open transactions (which also
        // wrote follow-up requests into request partitions) hide everything after them from a
        // read-committed consumer, so the first batch would never come and the partitions would
        // wait for the transaction timeout. Fencing with our producers aborts those transactions.
        prepare(generation).catch((err: unknown) => {
          // Overtaken by a later join or reset: that one prepares, nothing failed.
          if (!(err instanceof PreparationOvertaken)) log.warn('fencing and head restore failed, retrying at the next batch', { err: errorMessage(err) });
        });
      }),

    /** Fences and restores heads for the assignment `gen`, once; a failure is retried at the next call. */
    prepare,

    /** The producer and heads of a partition, or undefined if it was reassigned since `gen`. */
    partition(partition: number, gen: number): OwnedPartition | undefined {
      const producer = producers.get(partition);
      if (gen !== generation || !producer || !caughtUp.has(partition)) return undefined;
      const heads = deps.cache.partition(partition);
      const at = epoch;
      return {
        producer,
        heads,
        // Checked and issued synchronously: a put of this epoch is queued before any catch-up
        // of a later one starts, and that catch-up reads the same records again.
        committed: async (records, end) => {
          if (at !== epoch || !caughtUp.has(partition)) return;
          await deps.cache.partition(partition).putCommitted(records, end?.partition === partition ? end.offset : undefined);
        },
      };
    },

    /**
     * After a failed transaction the producer may be unusable (fenced, or its sequence state
     * lost in a broker restart): start over as after a rebalance, with new producers (fencing
     * again) and heads restored again.
     */
    async reset(): Promise<void> {
      epoch++;
      cancelPreparation();
      ready = undefined;
      caughtUp.clear();
      await closeProducers();
      // The cancelled preparation's fences and catch-up have ended once this returns.
      await preparations.catch(() => undefined);
    },

    /** Stops taking assignments, waits for a fence and catch-up in progress, and closes the producers. */
    async close(): Promise<void> {
      closed = true;
      cancelPreparation();
      await preparations.catch(() => undefined);
      await closeProducers();
    },
  };
}

export type PartitionOwner = ReturnType<typeof createPartitionOwner>;

/** The stage of a preparation queued behind a cancelled one that has not ended yet. */
export const WAITING_FOR_PREVIOUS = 'waiting for the previous preparation to end';

/** A preparation that a group join or a reset made obsolete before it finished: the next batch prepares again. */
export class PreparationOvertaken extends Error {
  constructor() {
    super('partition preparation overtaken by a rebalance or a reset; preparing again');
  }
}
