import type { KafkaMessage } from 'kafkajs';
import { LoaderError, errorMessage } from '../errors.js';
import type { Registry } from '../registry/registry.js';
import type { DeadLetter } from '../kafka/dead-letters.js';
import { InvalidRecordError, toSnapshotRow, toWebhookRow, type SnapshotRow, type WebhookRow } from './records.js';

export type InputKind = 'snapshots' | 'webhooks';

export interface DecodedBatch {
  snapshots: SnapshotRow[];
  webhooks: WebhookRow[];
  letters: DeadLetter[];
}

/**
 * Decodes one Kafka batch. A record that cannot be decoded (not Confluent-framed, a schema id the
 * registry does not know, bytes that are not Avro of that schema) or that breaks the record
 * contract becomes a dead letter; a registry that cannot be reached is thrown as retriable,
 * because the records are fine and must not go to the DLQ for an outage.
 */
export async function decodeBatch(registry: Registry, kind: InputKind, topic: string, partition: number, messages: KafkaMessage[], dlqTopic: string): Promise<DecodedBatch> {
  const out: DecodedBatch = { snapshots: [], webhooks: [], letters: [] };
  for (const m of messages) {
    const coordinates = { topic, partition, offset: m.offset };
    const letter = (errorClass: string, message: string): DeadLetter => ({
      dlqTopic,
      sourceTopic: topic,
      sourcePartition: partition,
      sourceOffset: m.offset,
      sourceKey: m.key ?? null,
      sourceValue: m.value ?? null,
      errorClass,
      errorMessage: message,
    });
    if (!m.value || m.value.length === 0) {
      out.letters.push(letter('decode', 'empty record value'));
      continue;
    }
    let value: unknown;
    try {
      value = await registry.decode(m.value);
    } catch (err) {
      if (isRegistryOutage(err)) throw new LoaderError(`schema registry unavailable while decoding: ${errorMessage(err)}`, { retriable: true, cause: err, context: coordinates });
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

/**
 * The registry client reports HTTP failures with `status`, and network failures too (mappersmith
 * turns them into status 400). Only 404 (no schema with that id) is the record's fault; errors
 * without a status come from the framing check or the Avro decoder and are the record's fault.
 */
function isRegistryOutage(err: unknown): boolean {
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === 'number') return status !== 404;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(E[A-Z]+|UND_ERR_.*)$/.test(code);
}
