import type { KafkaMessage } from 'kafkajs';

/** One record for a DLQ (schemas/dead-letter.avsc): the source record byte for byte, and why it failed. */
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

/** The dead letter of a record read from `sourceTopic` partition `partition`. */
export function deadLetterFor(dlqTopic: string, sourceTopic: string, partition: number, message: Pick<KafkaMessage, 'offset'> & Partial<Pick<KafkaMessage, 'key' | 'value'>>, errorClass: string, text: string): DeadLetter {
  return {
    dlqTopic,
    sourceTopic,
    sourcePartition: partition,
    sourceOffset: message.offset,
    sourceKey: message.key ?? null,
    sourceValue: message.value ?? null,
    errorClass,
    errorMessage: text,
  };
}
