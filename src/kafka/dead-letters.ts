import type { Message, Producer } from 'kafkajs';
import { deadLetterHeaders, type DeadLetter } from '../wire/dead-letter.js';
import type { MessageLimits } from './message-limits.js';
import { fitsAlone, splitSends } from './split-sends.js';

export interface TopicMessages {
  topic: string;
  messages: Message[];
}

/** Longest error message kept in a letter's header, in characters. */
const MAX_ERROR_MESSAGE = 4000;

/**
 * Turns dead letters into DLQ records: the source record's key, value and headers byte for byte,
 * with the context in headers (src/wire/dead-letter.ts, docs/CONTRACT.md). Kept apart from
 * sending so that a stage can put them inside its own Kafka transaction. A letter that would not
 * fit its DLQ's `max.message.bytes` alone (a source record near its own topic's limit, plus the
 * headers) is written without the source value, and a header says how many bytes were left out:
 * the source coordinates still lead to the record. Without that, the broker refuses the send for
 * good and the stage retries its batch for ever.
 */
export function createDeadLetterEncoder(stage: string, limitOf: MessageLimits, now: () => number = Date.now): (letters: DeadLetter[]) => TopicMessages[] {
  return (letters) => {
    const byTopic = new Map<string, Message[]>();
    const failedAt = now();
    for (const l of letters) {
      const letter = { ...l, errorMessage: l.errorMessage.slice(0, MAX_ERROR_MESSAGE) };
      const whole: Message = { key: l.sourceKey, value: l.sourceValue, headers: { ...l.sourceHeaders, ...deadLetterHeaders(letter, stage, failedAt) } };
      const message = fitsAlone(whole, limitOf(l.dlqTopic)) || l.sourceValue === null ? whole : { key: l.sourceKey, value: null, headers: { ...l.sourceHeaders, ...deadLetterHeaders(letter, stage, failedAt, l.sourceValue.length) } };
      byTopic.set(l.dlqTopic, [...(byTopic.get(l.dlqTopic) ?? []), message]);
    }
    return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
  };
}

/**
 * Sends dead letters with acks from all in-sync replicas and resolves only when the broker has
 * them: a stage commits the source offsets after this, so a record is in the DLQ before the
 * stage moves past it. A crash in between sends it again (a DLQ is at-least-once; the source
 * coordinates identify repeats). Letters are sent in as many requests as the DLQ's
 * `max.message.bytes` needs (a batch of large bad records would not fit one). Give it a
 * RenewingProducer (src/kafka/renewing-producer.ts) when its caller retries a failed send.
 */
export function createDeadLetterWriter(producer: Pick<Producer, 'sendBatch'>, stage: string, limitOf: MessageLimits) {
  const encode = createDeadLetterEncoder(stage, limitOf);
  return {
    encode,
    async send(letters: DeadLetter[]): Promise<void> {
      for (const send of splitSends(encode(letters), limitOf)) await producer.sendBatch({ topicMessages: send, acks: -1 });
    },
  };
}

export type DeadLetterWriter = ReturnType<typeof createDeadLetterWriter>;
