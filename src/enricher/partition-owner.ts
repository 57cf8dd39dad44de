import type { Consumer, Kafka, Producer } from 'kafkajs';
import { errorMessage } from '../errors.js';
import { fencePreviousOwner } from '../kafka/fence-previous-owner.js';
import { createTransactionalProducer } from '../kafka/producers.js';
import type { Logger } from '../log.js';
import type { EnricherTopics } from '../wire/topics.js';
import { restoreHeads, writeRestoreBarrier, type StoredHead } from './head-store.js';

export interface PartitionOwnerDeps {
  kafka: Kafka;
  log: Logger;
  internal: EnricherTopics;
}

/** What the owner holds for one request partition while it owns it. */
export interface OwnedPartition {
  producer: Producer;
  heads: Map<string, StoredHead>;
}

/**
 * Owns the resources of the request partitions assigned to it (docs/CONTRACT.md property 4). Per
 * assignment (generation) and partition: a transactional producer whose id is bound to the
 * partition, connected and then explicitly fenced (an empty transaction: whoever owned the
 * partition before has its open transaction aborted and can commit nothing more); then the
 * partition's heads are restored, read-committed, from the heads topic.
 */
export function createPartitionOwner(deps: PartitionOwnerDeps) {
  const { kafka, log } = deps;
  let generation = 0;
  let assigned: number[] = [];
  let ready: Promise<void> | undefined;
  const producers = new Map<number, Producer>();
  const heads = new Map<number, Map<string, StoredHead>>();

  const closeProducers = async () => {
    const all = [...producers.values()];
    producers.clear();
    await Promise.allSettled(all.map((p) => p.disconnect()));
  };

  // Bumped by every group join and every reset: a preparation started before one installs
  // nothing. Without it, a preparation overtaken by a reset (two partitions' transactions failing
  // together in a broker restart) still installed its producers, which a later preparation had
  // fenced, and its heads, read before transactions that committed meanwhile: versions numbered
  // again from stale heads.
  let epoch = 0;

  const prepare = (gen: number): Promise<void> => {
    ready ??= (async () => {
      const started = epoch;
      const partitions = [...assigned];
      const created = new Map<number, Producer>();
      const barriers = new Map<number, string>();
      try {
        await Promise.all(
          partitions.map(async (p) => {
            const producer = createTransactionalProducer(kafka, `${deps.internal.requests}.fetcher.${p}`);
            created.set(p, producer);
            await producer.connect();
            // An overtaken preparation must not fence the producers of the one that overtook it.
            if (started !== epoch) throw new PreparationOvertaken();
            // Connecting fences nobody in kafkajs; this does (see fencePreviousOwner), before the
            // restore below, which an open transaction of the previous owner would hold up.
            await fencePreviousOwner(producer);
            barriers.set(p, await writeRestoreBarrier(producer, deps.internal.heads, p));
          }),
        );
        const restored = await restoreHeads(kafka, deps.internal.heads, partitions, barriers);
        if (started !== epoch || gen !== generation) throw new PreparationOvertaken();
        for (const [p, producer] of created) producers.set(p, producer);
        for (const [p, h] of restored) heads.set(p, h);
        log.info('heads restored', { partitions, resources: [...restored.values()].reduce((n, h) => n + h.size, 0) });
      } catch (err) {
        await Promise.allSettled([...created.values()].map((producer) => producer.disconnect()));
        throw err;
      }
    })();
    const current = ready;
    current.catch(() => {
      if (ready === current) ready = undefined;
    });
    return current;
  };

  return {
    /** The current assignment's number: work started under an older one is dropped. */
    generation: () => generation,

    onGroupJoin: (c: Consumer) =>
      c.on(c.events.GROUP_JOIN, ({ payload }) => {
        // Every (re)join may follow a period in which another instance owned our partitions:
        // forget all heads and producers, and fence + restore again before the next batch.
        generation++;
        epoch++;
        assigned = payload.memberAssignment[deps.internal.requests] ?? [];
        ready = undefined;
        heads.clear();
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
      const partitionHeads = heads.get(partition);
      if (gen !== generation || !producer || !partitionHeads) return undefined;
      return { producer, heads: partitionHeads };
    },

    /**
     * After a failed transaction the producer may be unusable (fenced, or its sequence state
     * lost in a broker restart): start over as after a rebalance, with new producers (fencing
     * again) and heads restored again.
     */
    async reset(): Promise<void> {
      epoch++;
      ready = undefined;
      heads.clear();
      await closeProducers();
    },

    close: closeProducers,
  };
}

export type PartitionOwner = ReturnType<typeof createPartitionOwner>;

/** A preparation that a group join or a reset made obsolete before it finished: the next batch prepares again. */
export class PreparationOvertaken extends Error {
  constructor() {
    super('partition preparation overtaken by a rebalance or a reset; preparing again');
  }
}
