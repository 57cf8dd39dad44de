import type { Producer } from 'kafkajs';
import type { Registry } from '../registry/registry.js';

/** One record for a DLQ (schemas/dead-letter.avsc). */
export interface DeadLetter {
  dlqTopic: string;
  sourceTopic: string;
  sourcePartition: number;
  sourceOffset: string;
  sourceKey: Buffer | null;
  sourceValue: Buffer | null;
  errorClass: string;
  errorMessage: string;
}

/**
 * Sends dead letters with acks from all in-sync replicas (idempotent producer) and resolves only
 * when the broker has them: the sink commits the source offsets after this, so a record is in
 * the DLQ before the sink moves past it. A crash in between sends it again on restart (a DLQ is
 * at-least-once; source coordinates identify repeats).
 */
export function createDeadLetterWriter(producer: Producer, registry: Registry, stage: string) {
  const schemaIds = new Map<string, Promise<number>>();
  const schemaId = (topic: string): Promise<number> => {
    let id = schemaIds.get(topic);
    if (!id) {
      id = registry.registerFile(`${topic}-value`, 'dead-letter.avsc');
      id.catch(() => schemaIds.delete(topic));
      schemaIds.set(topic, id);
    }
    return id;
  };
  return {
    async send(letters: DeadLetter[]): Promise<void> {
      const byTopic = new Map<string, DeadLetter[]>();
      for (const l of letters) byTopic.set(l.dlqTopic, [...(byTopic.get(l.dlqTopic) ?? []), l]);
      const topicMessages = await Promise.all(
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
      await producer.sendBatch({ topicMessages, acks: -1 });
    },
  };
}

export type DeadLetterWriter = ReturnType<typeof createDeadLetterWriter>;
