import type { Kafka, KafkaMessage } from 'kafkajs';
import { readToEnd } from '../kafka/read-to-end.js';
import type { Registry } from '../registry/registry.js';
import { formatLetterId, readDeadLetter, type LetterId, type StoredDeadLetter } from '../wire/dead-letter.js';

/** Which letters an operator means: every condition given must hold. */
export interface LetterFilter {
  stages?: readonly string[];
  errorClasses?: readonly string[];
  /** failedAt at or after, in milliseconds since the epoch. */
  since?: number;
  /** failedAt before, in milliseconds since the epoch. */
  until?: number;
  /** Letter ids (`<topic>:<partition>:<offset>`). */
  ids?: readonly string[];
}

export function matches(letter: StoredDeadLetter, f: LetterFilter): boolean {
  if (f.stages?.length && !f.stages.includes(letter.stage)) return false;
  if (f.errorClasses?.length && !f.errorClasses.includes(letter.errorClass)) return false;
  if (f.since !== undefined && letter.failedAt < f.since) return false;
  if (f.until !== undefined && letter.failedAt >= f.until) return false;
  if (f.ids?.length && !f.ids.includes(formatLetterId(letter.id))) return false;
  return true;
}

/**
 * Every letter of the DLQ topics, in either format, read-committed to their current ends, in
 * offset order per partition (partitions one after the other): a DLQ of any partition count.
 */
export async function readDeadLetters(kafka: Kafka, registry: Registry, topics: readonly string[], filter: LetterFilter = {}): Promise<StoredDeadLetter[]> {
  const out: StoredDeadLetter[] = [];
  for (const topic of topics) {
    const messages: { partition: number; message: KafkaMessage }[] = [];
    await readToEnd(kafka, topic, (partition, message) => void messages.push({ partition, message }));
    messages.sort((a, b) => a.partition - b.partition || Number(BigInt(a.message.offset) - BigInt(b.message.offset)));
    for (const { partition, message } of messages) {
      const letter = await readDeadLetter({ topic, partition, offset: message.offset }, message, (v) => registry.decode(v));
      if (matches(letter, filter)) out.push(letter);
    }
  }
  return out;
}

/** One letter by its id, or undefined when that offset holds none (past the end, deleted by retention, a transaction marker). */
export async function readOneDeadLetter(kafka: Kafka, registry: Registry, id: LetterId): Promise<StoredDeadLetter | undefined> {
  let found: KafkaMessage | undefined;
  const admin = kafka.admin();
  await admin.connect();
  try {
    const range = (await admin.fetchTopicOffsets(id.topic)).find((p) => p.partition === id.partition);
    if (!range || BigInt(id.offset) < BigInt(range.low) || BigInt(id.offset) >= BigInt(range.high)) return undefined;
  } finally {
    await admin.disconnect();
  }
  await readToEnd(kafka, id.topic, (_p, m) => {
    if (m.offset === id.offset) found = m;
  }, [id.partition], { from: new Map([[id.partition, id.offset]]) });
  return found ? readDeadLetter(id, found, (v) => registry.decode(v)) : undefined;
}
