import type { EachBatchPayload } from 'kafkajs';
import type { Logger } from '../log.js';
import { isRebalanceError } from './rebalance-error.js';

type CommitPayload = Pick<EachBatchPayload, 'commitOffsetsIfNecessary' | 'uncommittedOffsets' | 'isRunning'>;

/** How often a throttled consumer commits its offsets while batches keep coming. */
export const COMMIT_INTERVAL_MS = 1000;

export interface CommitThrottle {
  /** After a batch's offsets are resolved: commits them now if the interval has passed or the consumer is stopping, else at the end of the interval. */
  commit(payload: CommitPayload): Promise<void>;
  /** Commits what is pending at once; call it before stopping the consumer. */
  flush(): Promise<void>;
}

/**
 * Commits a consumer group's resolved offsets at most once per interval instead of after every
 * batch. At 500 webhooks/s the router and the sink each sent ~100 OffsetCommit requests a second
 * (a quarter of all the loader's Kafka requests, each a write to __consumer_offsets). Offsets are
 * still only committed once resolved, i.e. after the batch's effects are durable, so this keeps
 * at-least-once; what it changes is how much is read again after a crash or a rebalance (up to
 * one interval), which both consumers absorb (requests coalesce, the sink's inserts are
 * idempotent). The last offsets are committed at the end of the interval even if no batch
 * follows, so an idle group shows no lag, and a commit that fails is tried again.
 */
export function createCommitThrottle(log: Logger, intervalMs = COMMIT_INTERVAL_MS): CommitThrottle {
  let last = -Infinity;
  let latest: CommitPayload | undefined;
  let timer: NodeJS.Timeout | undefined;
  const cancel = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const commitNow = async (payload: CommitPayload) => {
    cancel();
    last = Date.now();
    const offsets = payload.uncommittedOffsets();
    if (offsets.topics.length > 0) await payload.commitOffsetsIfNecessary(offsets);
  };
  // A failed commit (the coordinator is moving or loading after a broker restart) is tried again
  // at the next interval, whether it was deferred or immediate: kafkajs retries a failed batch in
  // place from its last resolved offset and never reads it again, so if no batch follows, nothing
  // else would commit those offsets, and the idle group would show lag, and read them again at
  // its next start, for good.
  const retryLater = (payload: CommitPayload, err: unknown) => {
    log.debug('offset commit failed; trying again at the next interval', { err });
    if (latest === payload) timer ??= setTimeout(() => void commitLatest(), intervalMs).unref();
  };
  const commitLatest = async () => {
    // The handle of a timer that has fired is dropped first: left set, it would keep every later
    // deferred commit from being scheduled.
    timer = undefined;
    const payload = latest;
    if (!payload?.isRunning()) return;
    await commitNow(payload).catch((err: unknown) => retryLater(payload, err));
  };
  return {
    async commit(payload) {
      latest = payload;
      const wait = last + intervalMs - Date.now();
      if (!payload.isRunning()) return commitNow(payload);
      if (wait <= 0) {
        return commitNow(payload).catch((err: unknown) => {
          // A rebalance error goes to kafkajs, which rejoins; the new generation reads the batch
          // again from the committed offset. Any other error stays here and is retried.
          if (isRebalanceError(err)) throw err;
          retryLater(payload, err);
        });
      }
      timer ??= setTimeout(() => void commitLatest(), wait).unref();
    },
    async flush() {
      cancel();
      await commitLatest();
    },
  };
}

