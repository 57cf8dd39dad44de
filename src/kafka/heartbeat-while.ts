/**
 * Awaits `work` while heartbeating the consumer group every `intervalMs`. kafkajs heartbeats
 * only between the callbacks of a batch: work that outlasts the session timeout (API reads at
 * a small budget, a Retry-After, a heads restore) gets the member thrown out, the batch read
 * again, and the same work repeated for nothing. A heartbeat that fails (a rebalance, or the
 * member is unknown) is rethrown once the work is done, so that kafkajs rejoins as it would
 * after its own heartbeat; the work itself is never cut short, so what it committed stays
 * consistent with what kafkajs has resolved.
 */
export async function heartbeatWhile<T>(heartbeat: () => Promise<void>, intervalMs: number, work: Promise<T>): Promise<T> {
  let failure: { err: unknown } | undefined;
  const timer = setInterval(() => {
    heartbeat().catch((err: unknown) => {
      failure ??= { err };
    });
  }, intervalMs);
  try {
    const result = await work;
    if (failure) throw failure.err;
    return result;
  } finally {
    clearInterval(timer);
  }
}
