import type { Message, Producer } from 'kafkajs';
import type { Registry } from '../registry/registry.js';
import type { DeadLetter } from '../wire/dead-letter.js';
import { DEAD_LETTER_SCHEMA_FILE, valueSubject } from '../wire/schemas.js';

export interface TopicMessages {
  topic: string;
  messages: Message[];
}

/**
 * Encodes dead letters for their DLQ topics (schema registered once per topic). Kept apart from
 * sending so that a stage can put them inside its own Kafka transaction.
 */
export function createDeadLetterEncoder(registry: Registry, stage: string): (letters: DeadLetter[]) => Promise<TopicMessages[]> {
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
        const messages = await Promise.all(
          list.map(async (l) => ({
            key: l.sourceKey,
            value: await registry.encode(id, {
              source_topic: l.sourceTopic,
              source_partition: l.sourcePartition,
              source_offset: Number(l.sourceOffset),
              source_key: l.sourceKey,
              source_value: l.sourceValue,
              stage,
              error_class: l.errorClass,
              error_message: l.errorMessage.slice(0, 4000),
              failed_at: Date.now(),
            }),
          })),
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
 * coordinates identify repeats). Give it a RenewingProducer (src/kafka/renewing-producer.ts)
 * when its caller retries a failed send.
 */
export function createDeadLetterWriter(producer: Pick<Producer, 'sendBatch'>, registry: Registry, stage: string) {
  const encode = createDeadLetterEncoder(registry, stage);
  return {
    encode,
    async send(letters: DeadLetter[]): Promise<void> {
      await producer.sendBatch({ topicMessages: await encode(letters), acks: -1 });
    },
  };
}

export type DeadLetterWriter = ReturnType<typeof createDeadLetterWriter>;
