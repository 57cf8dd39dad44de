/**
 * At most one read per resource per interval. For the escalation settings object a
 * PaymentEscalated names: every escalation of the legal entity names the same object, which
 * changes only when someone edits the settings, so reading it on each escalation would spend the
 * request budget on one unchanged object. The last read is the later of this process's own
 * reads and the head's fetch time, so a restarted or new owner also waits out the interval of a
 * read that made a version.
 */
export interface ReadThrottle {
  /** Whether `key` may be read at `now`; if so, the read is recorded. */
  admit(key: string, now: number, headFetchedAt?: number): boolean;
}

export function createReadThrottle(intervalMs: number, maxEntries = 10_000): ReadThrottle {
  const lastRead = new Map<string, number>();
  return {
    admit(key, now, headFetchedAt) {
      const last = Math.max(lastRead.get(key) ?? -Infinity, headFetchedAt ?? -Infinity);
      if (now - last < intervalMs) return false;
      // Oldest first (insertion order): a bounded memory, whatever the number of ids.
      lastRead.delete(key);
      lastRead.set(key, now);
      if (lastRead.size > maxEntries) lastRead.delete(lastRead.keys().next().value as string);
      return true;
    },
  };
}
