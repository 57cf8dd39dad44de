import type { Message } from 'kafkajs';
import type { TopicMessages } from './dead-letters.js';
import type { MessageLimits } from './message-limits.js';

/**
 * Bytes a record adds to a record batch beyond its key and value, at most: length, attributes,
 * timestamp and offset deltas, key and value lengths and header count, as varints.
 */
const RECORD_OVERHEAD = 40;
/** The record batch header (61 bytes, the 12 of offset and length included), with room to spare. */
const BATCH_OVERHEAD = 128;

const bytes = (v: Message['key'] | Message['value'] | undefined): number => (v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length);

/** Bytes of a record's headers: each name and value, and their lengths as varints (at most 5 bytes each). */
const headerBytes = (h: Message['headers']): number => {
  let n = 0;
  for (const [name, v] of Object.entries(h ?? {})) for (const one of Array.isArray(v) ? v : [v]) n += Buffer.byteLength(name) + bytes(one as Buffer | string | undefined) + 10;
  return n;
};

/** What one message adds to a record batch, in bytes (uncompressed). */
export function recordSize(m: Message): number {
  return bytes(m.key) + bytes(m.value) + headerBytes(m.headers) + RECORD_OVERHEAD;
}

/** Whether a message can be written to a topic whose record batches may hold `limit` bytes (`max.message.bytes`). */
export function fitsAlone(m: Message, limit: number): boolean {
  return recordSize(m) + BATCH_OVERHEAD <= limit;
}

/**
 * Splits topic messages into sends (each one sendBatch: one produce request, one record batch
 * per partition) whose messages for any one topic together fit that topic's limit. The sum is
 * per topic, not per partition: a bound that holds whichever partitions the messages go to.
 * Order within a topic is kept. A message that does not fit alone is the caller's to remove
 * first; here it would get a send of its own, which the broker refuses.
 */
export function splitSends(topicMessages: TopicMessages[], limitOf: MessageLimits): TopicMessages[][] {
  const sends: Map<string, Message[]>[] = [];
  for (const { topic, messages } of topicMessages) {
    const limit = limitOf(topic) - BATCH_OVERHEAD;
    let index = 0;
    let used = 0;
    for (const m of messages) {
      const size = recordSize(m);
      if (used > 0 && used + size > limit) {
        index++;
        used = 0;
      }
      used += size;
      const send = (sends[index] ??= new Map());
      send.set(topic, [...(send.get(topic) ?? []), m]);
    }
  }
  return sends.map((send) => [...send].map(([topic, messages]) => ({ topic, messages })));
}

/** Messages that fit a topic's limit alone, and those that never will. */
export function partitionBySize<M extends Message>(messages: M[], limit: number): { publishable: M[]; tooLarge: M[] } {
  const publishable: M[] = [];
  const tooLarge: M[] = [];
  for (const m of messages) (fitsAlone(m, limit) ? publishable : tooLarge).push(m);
  return { publishable, tooLarge };
}
