/** Reported once when work outlasts `afterMs`: a batch that never finishes stalls its whole consumer in silence. */
export interface SlowWork {
  afterMs: number;
  report: (elapsedMs: number) => void;
}

/**
 * Awaits `work` while heartbeating the consumer group every `intervalMs`. kafkajs heartbeats
 * only between the callbacks of a batch: work that outlasts the session timeout (API reads at
 * a small budget, a Retry-After, a heads restore) gets the member thrown out, the batch read
 * again, and the same work repeated for nothing. A heartbeat that fails (a rebalance, or the
 * member is unknown) is rethrown once the work is done, so that kafkajs rejoins as it would
 * after its own heartbeat; the work itself is never cut short, so what it committed stays
 * consistent with what kafkajs has resolved.
 *
 * The flip side: work that never settles keeps its member in the group for good, and kafkajs
 * fetches nothing more for any partition of that consumer (it waits for every batch of a fetch)
 * while nothing fails and nothing is logged. `slow` says so, once, when the work outlasts it.
 */
export async function heartbeatWhile<T>(heartbeat: () => Promise<void>, intervalMs: number, work: Promise<T>, slow?: SlowWork): Promise<T> {
  let failure: { err: unknown } | undefined;
  const started = Date.now();
  let reported = false;
  const timer = setInterval(() => {
    heartbeat().catch((err: unknown) => {
      failure ??= { err };
    });
    const elapsed = Date.now() - started;
    if (slow && !reported && elapsed >= slow.afterMs) {
      reported = true;
      slow.report(elapsed);
    }
  }, intervalMs);
  try {
    const result = await work;
    if (failure) throw failure.err;
    return result;
  } finally {
    clearInterval(timer);
  }
}
