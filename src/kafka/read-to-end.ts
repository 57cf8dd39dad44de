import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';
import { LoaderError } from '../errors.js';
import { retry } from '../retry.js';

export interface ReadOptions {
  /** Where to start per partition (default, and for partitions not named: the beginning). */
  from?: Map<number, string>;
  /** Also deliver records of open and aborted transactions (default false). */
  readUncommitted?: boolean;
  /** Awaited after each batch's records were passed to `onMessage` (backpressure for a slower store). */
  afterBatch?: (partition: number) => Promise<void>;
  /**
   * Per partition, the key of a record the caller committed just before the read (a barrier):
   * that partition's end is the barrier, not the end ListOffsets reports. That end is the last
   * stable offset: a partition whose unread range starts with a transaction still open looks
   * empty and is skipped, missing everything committed after it. The barrier is delivered only
   * once everything before it is resolved. It is not passed on.
   */
  barriers?: ReadonlyMap<number, string>;
  /**
   * Milliseconds without a batch of a partition still being read after which the read fails
   * (default: no limit). Bounds a read to a barrier that never comes.
   */
  idleTimeoutMs?: number;
  /** Aborting it ends the read: it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Reads partitions of a topic from the beginning to their current end, read-committed, calling
 * `onMessage` in offset order per partition. For state kept in compacted topics (heads, backfill
 * progress). Uses a throwaway consumer group (kafkajs has no manual assignment), deleted after.
 * The end is the last stable offset: a transaction still open in a partition hides what
 * follows it, and one open at the start of the unread range makes the partition look empty.
 * Callers that must see everything committed so far fence the writers and pass `barriers`.
 * Returns, per partition read, the offset it was read up to (every record below it was
 * delivered, was no committed data, or was the barrier).
 */
export async function readToEnd(
  kafka: Kafka,
  topic: string,
  onMessage: (partition: number, message: KafkaMessage) => void,
  partitions?: number[],
  options: ReadOptions = {},
): Promise<Map<number, string>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    // A topic created a moment ago (a first backfill's progress topic) may have no leader yet:
    // kafkajs's admin gives up on NOT_LEADER_OR_FOLLOWER, which is retriable.
    const offsets = await retry(() => admin.fetchTopicOffsets(topic), { attempts: 10, minDelayMs: 200, maxDelayMs: 2000, shouldRetry: (err) => (err as { retriable?: boolean }).retriable === true });
    const wanted = partitions ?? offsets.map((o) => o.partition);
    const start = (o: { partition: number; low: string }) => {
      const from = options.from?.get(o.partition);
      return from !== undefined && BigInt(from) > BigInt(o.low) ? from : o.low;
    };
    const barriers = options.barriers ?? new Map<number, string>();
    const pending = new Set(wanted.filter((p) => barriers.has(p) || offsets.some((o) => o.partition === p && BigInt(o.high) > BigInt(start(o)))));
    const ends = new Map(offsets.filter((o) => wanted.includes(o.partition) && !pending.has(o.partition)).map((o) => [o.partition, o.high]));
    if (pending.size === 0) return ends;
    const groupId = `${topic}.read.${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, readUncommitted: options.readUncommitted ?? false, sessionTimeout: 10_000, heartbeatInterval: 1000 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      let idle: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      await new Promise<void>((resolve, reject) => {
        consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
        const stillIdle = () => {
          if (options.idleTimeoutMs === undefined) return;
          clearTimeout(idle);
          idle = setTimeout(() => {
            const [partition] = pending;
            reject(new LoaderError(`read of ${topic} made no progress for ${options.idleTimeoutMs} ms; giving up`, { retriable: true, context: { topic, ...(partition === undefined ? {} : { partition }) } }));
          }, options.idleTimeoutMs);
          idle.unref();
        };
        stillIdle();
        if (options.signal) {
          onAbort = () => reject(options.signal?.reason);
          if (options.signal.aborted) onAbort();
          else options.signal.addEventListener('abort', onAbort, { once: true });
        }
        const done = (partition: number, end: string) => {
          if (!pending.delete(partition)) return;
          ends.set(partition, end);
          consumer.pause([{ topic, partitions: [partition] }]);
          if (pending.size === 0) resolve();
        };
        // The end is detected from the batch-processed event, not in eachBatch: kafkajs does not
        // call eachBatch for a fetch holding only aborted records and transaction markers (the
        // tail a fenced writer leaves), but it reports that fetch here, with its offsets.
        consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
          const { partition, offsetLag, highWatermark } = payload;
          if (pending.has(partition)) stillIdle();
          if (offsetLag !== '0' || barriers.has(partition)) return;
          // Lag 0: the fetch ended at the high watermark, so everything below it went by.
          done(partition, highWatermark);
        });
        void consumer
          .run({
            autoCommit: false,
            eachBatch: async ({ batch }) => {
              if (!pending.has(batch.partition)) {
                consumer.pause([{ topic, partitions: [batch.partition] }]);
                return;
              }
              const barrier = barriers.get(batch.partition);
              for (const m of batch.messages) {
                if (barrier !== undefined && m.key?.toString('utf8') === barrier) {
                  await options.afterBatch?.(batch.partition);
                  done(batch.partition, (BigInt(m.offset) + 1n).toString());
                  return;
                }
                onMessage(batch.partition, m);
              }
              await options.afterBatch?.(batch.partition);
            },
          })
          .catch(reject);
        // Where to start: a seek right after run (kafkajs applies it before the first fetch).
        // admin.setOffsets would run a whole consumer of the group first, a join that costs
        // seconds (the broker delays a new group's first rebalance), on every catch-up.
        if (options.from) for (const o of offsets) if (pending.has(o.partition)) consumer.seek({ topic, partition: o.partition, offset: start(o) });
      }).finally(() => {
        clearTimeout(idle);
        if (onAbort) options.signal?.removeEventListener('abort', onAbort);
      });
    } finally {
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return ends;
  } finally {
    await admin.disconnect();
  }
}
