import type { IHeaders, Kafka, Message } from 'kafkajs';
import { fencePreviousOwner } from '../kafka/fence-previous-owner.js';
import { createTransactionalProducer } from '../kafka/producers.js';
import { readToEnd } from '../kafka/read-to-end.js';
import { ensureTopics } from '../kafka/topics.js';
import type { Registry } from '../registry/registry.js';
import { formatLetterId, type StoredDeadLetter } from '../wire/dead-letter.js';
import { dlqRedrivesTopic, dlqRedrivesTopicSpec } from '../wire/topics.js';
import { readDeadLetters, type LetterFilter } from './dead-letter-reader.js';

/**
 * Error classes never sent back, whatever the filter: the record is fine and the warehouse
 * already holds what it says (`duplicate-content`), or another version holds its number, so a copy
 * would be refused the same way (`version-conflict`: repair the heads first; see docs/OPERATIONS.md).
 */
export const NOT_REDRIVEN: ReadonlyMap<string, string> = new Map([
  ['version-conflict', 'another version holds its number; a copy is refused the same way (repair heads, then re-read the resource)'],
  ['duplicate-content', 'the warehouse already holds this version'],
]);

/** Header on a redriven copy: the letter it came from (`<dlq topic>:<partition>:<offset>`). */
export const REDRIVEN_FROM_HEADER = 'billing_loader.dlq.redriven_from';

/** Letters per transaction. */
const CHUNK = 200;

export interface RedriveOutcome {
  redriven: StoredDeadLetter[];
  /** Letters matched but not sent, with why (already redriven ones are not listed: they are done). */
  skipped: { letter: StoredDeadLetter; reason: string }[];
  alreadyRedriven: number;
}

/** The letters already redriven, by id, with the marker's content. */
export async function readRedriveMarkers(kafka: Kafka, prefix: string): Promise<Map<string, { redrivenAt: string; to: string }>> {
  const markers = new Map<string, { redrivenAt: string; to: string }>();
  const admin = kafka.admin();
  await admin.connect();
  const exists = (await admin.listTopics()).includes(dlqRedrivesTopic(prefix));
  await admin.disconnect();
  if (!exists) return markers;
  await readToEnd(kafka, dlqRedrivesTopic(prefix), (_p, m) => {
    if (m.key && m.value) markers.set(m.key.toString(), JSON.parse(m.value.toString()) as { redrivenAt: string; to: string });
  });
  return markers;
}

function whyNot(letter: StoredDeadLetter): string | undefined {
  if (letter.format === 'unknown') return 'not a dead letter of either format';
  const refused = NOT_REDRIVEN.get(letter.errorClass);
  if (refused) return `${letter.errorClass}: ${refused}`;
  if (letter.value === null) return `the source value was not kept (${letter.valueDroppedBytes} bytes); read it at ${letter.sourceTopic}:${letter.sourcePartition}:${letter.sourceOffset}`;
  return undefined;
}

/**
 * Sends the letters the filter selects back to their source topics, each exactly once. Every copy
 * and its marker (dlqRedrivesTopic) are written in one Kafka transaction under one transactional
 * id: fencing it first (fencePreviousOwner) stops any redrive still running (its open transaction is aborted),
 * and the markers are read only after that, so a letter a concurrent or crashed redrive sent is
 * seen as sent, and one it did not commit is sent now. A copy is the original key, value and
 * headers, plus REDRIVEN_FROM_HEADER; it goes to the partition its key hashes to (the murmur2 of
 * every stage), or to its original partition when it has no key.
 */
export async function redrive(
  deps: { kafka: Kafka; registry: Registry; prefix: string; dlqTopics: readonly string[] },
  filter: LetterFilter,
  options: { dryRun?: boolean; onRedriven?: (letter: StoredDeadLetter) => void } = {},
): Promise<RedriveOutcome> {
  const { kafka, prefix } = deps;
  const markersTopic = dlqRedrivesTopic(prefix);
  const producer = createTransactionalProducer(kafka, `${prefix}.dlq.redrive`);
  if (!options.dryRun) {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, [dlqRedrivesTopicSpec(markersTopic)]);
    } finally {
      await admin.disconnect();
    }
    await producer.connect();
    // Before the markers are read: whatever an earlier redrive did not commit is aborted now.
    await fencePreviousOwner(producer);
  }
  try {
    const markers = await readRedriveMarkers(kafka, prefix);
    const letters = await readDeadLetters(deps.kafka, deps.registry, deps.dlqTopics, filter);
    const outcome: RedriveOutcome = { redriven: [], skipped: [], alreadyRedriven: 0 };
    const todo: StoredDeadLetter[] = [];
    for (const letter of letters) {
      if (markers.has(formatLetterId(letter.id))) outcome.alreadyRedriven++;
      else {
        const reason = whyNot(letter);
        if (reason) outcome.skipped.push({ letter, reason });
        else todo.push(letter);
      }
    }
    if (options.dryRun) return { ...outcome, redriven: todo };
    for (let i = 0; i < todo.length; i += CHUNK) {
      const chunk = todo.slice(i, i + CHUNK);
      const transaction = await producer.transaction();
      try {
        const bySource = new Map<string, Message[]>();
        for (const l of chunk) bySource.set(l.sourceTopic, [...(bySource.get(l.sourceTopic) ?? []), copyOf(l)]);
        const redrivenAt = new Date().toISOString();
        await transaction.sendBatch({
          acks: -1,
          topicMessages: [
            ...[...bySource].map(([topic, messages]) => ({ topic, messages })),
            { topic: markersTopic, messages: chunk.map((l) => ({ key: formatLetterId(l.id), value: JSON.stringify({ redrivenAt, to: l.sourceTopic }) })) },
          ],
        });
        await transaction.commit();
      } catch (err) {
        await transaction.abort().catch(() => undefined);
        throw err;
      }
      for (const l of chunk) {
        outcome.redriven.push(l);
        options.onRedriven?.(l);
      }
    }
    return outcome;
  } finally {
    await producer.disconnect();
  }
}

function copyOf(l: StoredDeadLetter): Message {
  const headers: IHeaders = { ...l.headers, [REDRIVEN_FROM_HEADER]: formatLetterId(l.id) };
  return { key: l.key, value: l.value, headers, ...(l.key === null && l.sourcePartition >= 0 ? { partition: l.sourcePartition } : {}) };
}
