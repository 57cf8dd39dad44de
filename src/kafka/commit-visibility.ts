import type { Admin } from 'kafkajs';

/** Where a committed transaction's records of one partition ended (the offset after its last). */
export interface CommittedWrite {
  topic: string;
  partition: number;
  end: string;
}

/** A partition whose committed records stay hidden from read-committed readers. */
export interface HiddenCommit {
  topic: string;
  partition: number;
  /** The partition's last stable offset. */
  lastStable: string;
  /** The end of the oldest committed write still beyond it. */
  end: string;
  /** Since when, in milliseconds. */
  hiddenMs: number;
}

/**
 * Follows what a process's transactions committed until read-committed readers can see it: a
 * partition's last stable offset passes a commit's records once the coordinator has written its
 * markers, in milliseconds. Records of a commit still beyond the last stable offset after
 * `hiddenAfterMs` (longer than any transaction of ours may stay open: the coordinator aborts it
 * at the transaction timeout) sit behind a hanging transaction (hanging-transactions.ts).
 *
 * Writes are kept per partition as a short list of (end, time) steps, one per `stepMs`: a
 * partition written to steadily passes its older steps while newer ones wait for their markers,
 * and only a step left behind for `hiddenAfterMs` counts.
 */
export function createCommitVisibility(options: { hiddenAfterMs: number; stepMs?: number; now?: () => number }) {
  const now = options.now ?? Date.now;
  const stepMs = options.stepMs ?? 1000;
  const steps = new Map<string, { topic: string; partition: number; steps: { end: bigint; at: number }[] }>();
  return {
    /** Records a committed transaction's writes. */
    committed(writes: CommittedWrite[]): void {
      const at = now();
      for (const w of writes) {
        const key = `${w.topic}\u0000${w.partition}`;
        const entry = steps.get(key) ?? { topic: w.topic, partition: w.partition, steps: [] };
        steps.set(key, entry);
        const end = BigInt(w.end);
        const last = entry.steps[entry.steps.length - 1];
        if (last && at - last.at < stepMs) last.end = end > last.end ? end : last.end;
        else entry.steps.push({ end, at });
      }
    },
    /** The topics with writes not yet seen stable. */
    topics(): string[] {
      return [...new Set([...steps.values()].map((e) => e.topic))];
    },
    /**
     * Takes each partition's last stable offset (`lastStable(topic)`: partition -> offset), forgets
     * what it passed, and returns the partitions with a commit hidden for longer than
     * `hiddenAfterMs`; those are forgotten too (the caller acts on them once).
     */
    check(lastStable: (topic: string) => Map<number, bigint> | undefined): HiddenCommit[] {
      const at = now();
      const hidden: HiddenCommit[] = [];
      for (const [key, entry] of steps) {
        const stable = lastStable(entry.topic)?.get(entry.partition);
        if (stable === undefined) continue;
        entry.steps = entry.steps.filter((s) => s.end > stable);
        const oldest = entry.steps[0];
        if (!oldest) steps.delete(key);
        else if (at - oldest.at >= options.hiddenAfterMs) {
          hidden.push({ topic: entry.topic, partition: entry.partition, lastStable: stable.toString(), end: oldest.end.toString(), hiddenMs: at - oldest.at });
          steps.delete(key);
        }
      }
      return hidden;
    },
    /** Forgets everything (the writer's producers were replaced: their commits are checked anew). */
    clear(): void {
      steps.clear();
    },
  };
}

export type CommitVisibility = ReturnType<typeof createCommitVisibility>;

/** Each partition's last stable offset (ListOffsets read committed: kafkajs's admin offsets). */
export async function lastStableOffsets(admin: Admin, topics: string[]): Promise<Map<string, Map<number, bigint>>> {
  const result = new Map<string, Map<number, bigint>>();
  for (const topic of topics) {
    const offsets = await admin.fetchTopicOffsets(topic);
    result.set(topic, new Map(offsets.map((o) => [o.partition, BigInt(o.offset)])));
  }
  return result;
}
