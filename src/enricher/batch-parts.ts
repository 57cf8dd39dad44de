import type { KafkaMessage } from 'kafkajs';

/**
 * Where the part of a batch that starts at `start` ends (exclusive): the longest run of messages
 * naming at most `maxResources` distinct keys. A part is read, versioned and committed in its
 * own transaction; all its requests are read before its fetches start, so coalescing inside it
 * stays fresh. A resource named in two parts is read twice, which costs a read, never a version.
 */
export function partEnd(messages: KafkaMessage[], start: number, maxResources: number): number {
  const keys = new Set<string>();
  let end = start;
  for (; end < messages.length; end++) {
    const key = (messages[end] as KafkaMessage).key?.toString('utf8') ?? '';
    if (!keys.has(key) && keys.size >= maxResources) break;
    keys.add(key);
  }
  return Math.max(end, start + 1);
}

export interface PartSizer {
  /** Distinct resources the next part may name. */
  size(): number;
  /** After a part: how many distinct resources it named and how long it took, start to commit. */
  record(resources: number, elapsedMs: number): void;
}

const MIN_PART = 10;
const MAX_PART = 5000;

/**
 * Sizes parts so that one takes about `targetMs` at the rate the last one achieved: the API
 * budget (shared with the other partitions processed at once), its latency and its Retry-Afters
 * all show in that rate. The size at most doubles from what a part really named, so a run of
 * small, quick batches (requests served from memory, a quiet load) does not make the first part
 * of a backlog huge. The first part is small too: six partitions starting a backlog at once
 * with 20 each are 120 reads, six seconds at the default budget, which a stop waits for.
 */
export function createPartSizer(targetMs: number, initial = 20): PartSizer {
  let current = initial;
  return {
    size: () => current,
    record(resources, elapsedMs) {
      if (resources === 0) return;
      const estimate = Math.floor((resources * targetMs) / Math.max(elapsedMs, 1));
      current = Math.max(MIN_PART, Math.min(estimate, 2 * Math.max(resources, MIN_PART), MAX_PART));
    },
  };
}
