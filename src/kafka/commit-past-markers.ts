import type { Consumer } from 'kafkajs';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';

/**
 * Commits a consumer's group past batches that held only transaction markers (or only aborted
 * records). kafkajs hands such a batch to no handler: it resolves the offset in memory and
 * commits it only with autoCommit, which the loader's stages turn off (they commit after their
 * work, or inside their transactions). Their committed offsets then stayed before the markers,
 * and the stage watch, which counts lag from committed offsets to the last stable offset, saw
 * lag that never went: a stall, a restart that reads the same markers again, and finally a
 * failed liveness check. Markers with no record after them are common: a fetcher's preparation
 * commits one into every partition it may have left a hanging transaction in
 * (hanging-transactions.ts), and any transaction's marker can arrive in a later fetch than its
 * records. Nothing is skipped that a handler would have seen: kafkajs delivers a partition's
 * batches in order, one at a time, so a batch like this comes only after the work before it.
 */
export function commitPastMarkers(consumer: Consumer, log: Logger): void {
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.batchSize !== 0) return;
    const offset = (BigInt(payload.lastOffset) + 1n).toString();
    consumer.commitOffsets([{ topic: payload.topic, partition: payload.partition, offset }]).catch((err: unknown) => {
      // A rebalance or a coordinator moving: the batch is fetched again and this is tried again.
      log.debug('committing past transaction markers failed', { topic: payload.topic, partition: payload.partition, offset, err: errorMessage(err) });
    });
  });
}
