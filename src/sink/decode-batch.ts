import type { KafkaMessage } from 'kafkajs';
import { LoaderError, UnknownSchemaIdError, classifyRegistryError, errorMessage, unknownSchemaId } from '../errors.js';
import type { Registry } from '../registry/registry.js';
import { deadLetterFor, type DeadLetter } from '../wire/dead-letter.js';
import { InvalidRecordError, toSnapshotRow, toWebhookRow, type SnapshotRow, type WebhookRow } from './records.js';

export type InputKind = 'snapshots' | 'webhooks';

export interface DecodedBatch {
  snapshots: SnapshotRow[];
  webhooks: WebhookRow[];
  letters: DeadLetter[];
}

/**
 * Decodes one Kafka batch. A record that cannot be decoded (not Confluent-framed, bytes that are
 * not Avro of their schema) or that breaks the record contract becomes a dead letter. A registry
 * that cannot be reached, or that does not know a framed record's schema id, is thrown as
 * retriable, because the records are fine and must not go to the DLQ for an outage or a
 * misconfiguration.
 */
export async function decodeBatch(registry: Registry, kind: InputKind, topic: string, partition: number, messages: KafkaMessage[], dlqTopic: string): Promise<DecodedBatch> {
  const out: DecodedBatch = { snapshots: [], webhooks: [], letters: [] };
  for (const m of messages) {
    const coordinates = { topic, partition, offset: m.offset };
    const letter = (errorClass: string, message: string): DeadLetter => deadLetterFor(dlqTopic, topic, partition, m, errorClass, message);
    if (!m.value || m.value.length === 0) {
      out.letters.push(letter('decode', 'empty record value'));
      continue;
    }
    let value: unknown;
    try {
      value = await registry.decode(m.value);
    } catch (err) {
      const failure = classifyRegistryError(err, m.value);
      if (failure === 'configuration') throw new UnknownSchemaIdError(unknownSchemaId(err, m.value) ?? m.value.readInt32BE(1), err, coordinates);
      if (failure === 'transient') throw new LoaderError(`schema registry unavailable while decoding: ${errorMessage(err)}`, { retriable: true, cause: err, context: coordinates });
      out.letters.push(letter('decode', errorMessage(err)));
      continue;
    }
    try {
      if (kind === 'snapshots') out.snapshots.push(toSnapshotRow(value, coordinates));
      else out.webhooks.push(toWebhookRow(value, coordinates));
    } catch (err) {
      if (!(err instanceof InvalidRecordError)) throw err;
      out.letters.push(letter(err.errorClass, err.message));
    }
  }
  return out;
}
