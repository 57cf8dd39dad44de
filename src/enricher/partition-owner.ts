import type { Consumer, Kafka, Producer } from 'kafkajs';
import { errorMessage } from '../errors.js';
import { fencePreviousOwner } from '../kafka/fence-previous-owner.js';
import { createTransactionalProducer } from '../kafka/producers.js';
import type { Logger } from '../log.js';
import type { EnricherTopics } from '../wire/topics.js';
import { restoreHeads, type StoredHead } from './head-store.js';

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

  return {
    /** The current assignment's number: work started under an older one is dropped. */
    generation: () => generation,

    onGroupJoin: (c: Consumer) =>
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
      ready = undefined;
      heads.clear();
      await closeProducers();
    },

    close: closeProducers,
  };
}

export type PartitionOwner = ReturnType<typeof createPartitionOwner>;
