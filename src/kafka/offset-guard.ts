import type { Admin, Consumer, EachBatchPayload } from 'kafkajs';
import { offsetGoneError } from './topic-checks.js';

/**
 * Keeps a running consumer from skipping records that were deleted under it. When the offset a
 * consumer fetches is no longer in the log, kafkajs resets it to the earliest offset by itself
 * (consumerGroup.recoverFromOffsetOutOfRange) and the next batch simply starts later. Here every
 * batch's first offset is compared with the offset that should come next (the committed one after
 * a group join, else the last resolved one plus one); only when it is further on by more than one
 * offset (aborted records make such gaps too) is the partition's first kept offset read, and
 * if the expected offset is below it, the batch fails with the one-line refusal instead.
 */
export function guardOffsets(consumer: Consumer, admin: Admin, groupId: string, fix: string, eachBatch: (payload: EachBatchPayload) => Promise<void>): (payload: EachBatchPayload) => Promise<void> {
  const expected = new Map<string, bigint>();
  consumer.on(consumer.events.GROUP_JOIN, () => expected.clear());
  return async (payload) => {
    const { batch } = payload;
    const first = batch.firstOffset();
    const key = `${batch.topic}/${batch.partition}`;
    if (first !== null) {
      let next = expected.get(key);
      if (next === undefined) {
        const [committed] = await admin.fetchOffsets({ groupId, topics: [batch.topic] });
        const offset = committed?.partitions.find((p) => p.partition === batch.partition)?.offset ?? '-1';
        next = BigInt(offset) >= 0n ? BigInt(offset) : undefined;
      }
      // A gap of one offset is a transaction's commit marker: a read-committed consumer of a
      // transactional topic (the snapshots) meets one at almost every batch, and reading the log
      // start for each would put an admin round trip on the sink's hot path. Records deleted
      // under a consumer go by whole segments or deleteRecords ranges, never a lone offset there.
      if (next !== undefined && BigInt(first) > next + 1n) {
        const range = (await admin.fetchTopicOffsets(batch.topic)).find((p) => p.partition === batch.partition);
        if (range && next < BigInt(range.low)) throw offsetGoneError({ groupId, topic: batch.topic, partition: batch.partition, offset: String(next), low: range.low, high: range.high, fix });
      }
    }
    await eachBatch({
      ...payload,
      resolveOffset: (offset: string) => {
        payload.resolveOffset(offset);
        expected.set(key, BigInt(offset) + 1n);
      },
    });
  };
}
