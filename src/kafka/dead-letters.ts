import type { Message, Producer } from 'kafkajs';
import type { Registry } from '../registry/registry.js';
import type { DeadLetter } from '../wire/dead-letter.js';
import { DEAD_LETTER_SCHEMA_FILE, valueSubject } from '../wire/schemas.js';
import type { MessageLimits } from './message-limits.js';
import { fitsAlone, splitSends } from './split-sends.js';

export interface TopicMessages {
  topic: string;
  messages: Message[];
}

/**
 * Encodes dead letters for their DLQ topics (schema registered once per topic). Kept apart from
 * sending so that a stage can put them inside its own Kafka transaction. A dead letter that
 * would not fit its DLQ's `max.message.bytes` alone (a source record near its own topic's
 * limit, plus the letter's fields) is encoded without the source value, and its error message
 * says so: the source coordinates still lead to the record. Without that, the broker refuses the
 * send for good and the stage retries its batch for ever.
 */
export function createDeadLetterEncoder(registry: Registry, stage: string, limitOf: MessageLimits): (letters: DeadLetter[]) => Promise<TopicMessages[]> {
  const schemaIds = new Map<string, Promise<number>>();
  const schemaId = (topic: string): Promise<number> => {
    let id = schemaIds.get(topic);
    if (!id) {
      id = registry.registerFile(valueSubject(topic), DEAD_LETTER_SCHEMA_FILE);
      id.catch(() => schemaIds.delete(topic));
      schemaIds.set(topic, id);
    }
    return id;
  };
  return async (letters) => {
    const byTopic = new Map<string, DeadLetter[]>();
    for (const l of letters) byTopic.set(l.dlqTopic, [...(byTopic.get(l.dlqTopic) ?? []), l]);
    return Promise.all(
      [...byTopic].map(async ([topic, list]) => {
        const id = await schemaId(topic);
        const limit = limitOf(topic);
        const encodeLetter = async (l: DeadLetter, sourceValue: Buffer | null, errorMessage: string) => ({
          key: l.sourceKey,
          value: await registry.encode(id, {
            source_topic: l.sourceTopic,
            source_partition: l.sourcePartition,
            source_offset: Number(l.sourceOffset),
            source_key: l.sourceKey,
            source_value: sourceValue,
            stage,
            error_class: l.errorClass,
            error_message: errorMessage,
            failed_at: Date.now(),
          }),
        });
        const messages = await Promise.all(
          list.map(async (l) => {
            const message = l.errorMessage.slice(0, 4000);
            const whole = await encodeLetter(l, l.sourceValue, message);
            if (fitsAlone(whole, limit) || l.sourceValue === null) return whole;
            return encodeLetter(l, null, `${message} (source value of ${l.sourceValue.length} bytes not kept: with it the dead letter exceeds the ${limit} bytes ${topic} accepts; read it at its source offset)`);
          }),
        );
        return { topic, messages };
      }),
    );
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
export function createDeadLetterWriter(producer: Pick<Producer, 'sendBatch'>, registry: Registry, stage: string, limitOf: MessageLimits) {
  const encode = createDeadLetterEncoder(registry, stage, limitOf);
  return {
    encode,
    async send(letters: DeadLetter[]): Promise<void> {
      for (const send of splitSends(await encode(letters), limitOf)) await producer.sendBatch({ topicMessages: send, acks: -1 });
    },
  };
}

export type DeadLetterWriter = ReturnType<typeof createDeadLetterWriter>;
