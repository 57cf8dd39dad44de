import type { Kafka } from 'kafkajs';
import { LoaderError } from '../errors.js';
import { readToEnd } from '../kafka/read-to-end.js';
import { resumeOffset, type HeadCache } from './head-cache.js';
import { isRestoreBarrier, type RestoreBarrier } from './head-store.js';

/**
 * Records applied between two remaps of the caches being loaded: random keys touch a new 4 KiB
 * page almost every time, so this bounds the mapped pages a load adds to RSS to some 100 MB.
 */
const REMAP_EVERY = 25_000;

/**
 * How long a read up to a barrier may go without a record of a partition it waits for before it
 * fails: a barrier that is never reached (it lies behind where the read started, or its
 * transaction never completes) then ends the preparation with an error, which is retried,
 * instead of holding it, and every later one, forever.
 */
export const BARRIER_IDLE_TIMEOUT_MS = 60_000;

export interface CatchUpOptions {
  /** Aborted when the catch-up is overtaken: nothing more is applied, the mark stays, and the catch-up rejects. */
  signal?: AbortSignal;
  /** See BARRIER_IDLE_TIMEOUT_MS. */
  idleTimeoutMs?: number;
}

/** What a catch-up read: per partition, where it started and how many head records it read. */
export interface CatchUp {
  partition: number;
  /** The offset reading started from. */
  from: string;
  /** The cache was wiped first: it had no mark, or one of another cluster, or outside the log. */
  full: boolean;
  records: number;
}

/**
 * Brings the cache of each given partition of the heads topic up to the partition's end,
 * read-committed (only heads whose snapshot transaction committed): from the cache's mark when
 * it is valid for this cluster and log (resumeOffset), else from the start after wiping it.
 * Another instance may have written heads while this one did not own a partition; reading from
 * the mark to the end picks them up. The caller fences older producers of those partitions
 * first and passes, per partition, the key of a barrier it committed after fencing
 * (writeRestoreBarrier): the partition is read up to that record, not to the last stable offset,
 * which stops short of everything after a transaction the coordinator has not completed yet.
 * Without barriers (tools, benchmarks) it reads to the end ListOffsets reports. Reading starts at
 * the barrier's offset at the latest: a mark past the barrier (moved there by a catch-up of
 * another preparation) would otherwise make the read wait for a key it has already passed.
 */
export async function catchUpHeads(kafka: Kafka, topic: string, partitions: number[], cache: HeadCache, barriers?: ReadonlyMap<number, RestoreBarrier>, options: CatchUpOptions = {}): Promise<CatchUp[]> {
  const { signal } = options;
  if (partitions.length === 0) return [];
  const admin = kafka.admin();
  await admin.connect();
  let clusterId: string;
  let logs: { partition: number; low: string; high: string }[];
  try {
    clusterId = (await admin.describeCluster()).clusterId;
    logs = await admin.fetchTopicOffsets(topic);
  } finally {
    await admin.disconnect();
  }
  const result = new Map<number, CatchUp>();
  for (const partition of partitions) {
    const log = logs.find((l) => l.partition === partition);
    if (!log) throw new LoaderError('heads partition not found', { retriable: true, context: { topic, partition } });
    const store = cache.partition(partition);
    const resume = resumeOffset(store.mark(), { clusterId, topic, partition }, log);
    signal?.throwIfAborted();
    if (resume === undefined) await store.wipe();
    const barrier = barriers?.get(partition)?.offset;
    const from = resume !== undefined && barrier !== undefined && BigInt(barrier) < BigInt(resume) ? barrier : resume;
    result.set(partition, { partition, from: from ?? log.low, full: resume === undefined, records: 0 });
  }
  let remapped = 0;
  const appliedSinceRemap = () => [...result.values()].reduce((n, c) => n + c.records, 0) - remapped;
  const ends = await readToEnd(
    kafka,
    topic,
    (partition, m) => {
      const key = m.key?.toString('utf8');
      const progress = result.get(partition);
      if (!progress || key === undefined || isRestoreBarrier(key) || signal?.aborted) return;
      progress.records++;
      cache.partition(partition).apply(key, m.value);
    },
    partitions,
    {
      from: new Map([...result.values()].map((c) => [c.partition, c.from])),
      ...(barriers ? { barriers: new Map([...barriers].map(([partition, b]) => [partition, b.key])), idleTimeoutMs: options.idleTimeoutMs ?? BARRIER_IDLE_TIMEOUT_MS } : {}),
      ...(signal ? { signal } : {}),
      afterBatch: async (partition) => {
        await cache.partition(partition).flushed();
        if (appliedSinceRemap() < REMAP_EVERY) return;
        await cache.remap(partitions);
        remapped = [...result.values()].reduce((n, c) => n + c.records, 0);
      },
    },
  );
  // The mark is written after the records it covers, so it never claims more than the cache
  // holds; an overtaken catch-up writes none (the one that overtook it reads from the old mark).
  signal?.throwIfAborted();
  for (const [partition, end] of ends) await cache.partition(partition).setMark(clusterId, end);
  if (appliedSinceRemap() > 0) await cache.remap(partitions);
  return [...result.values()];
}
