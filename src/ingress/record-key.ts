import { WEBHOOK_FIELDS } from '../wire/webhook-fields.js';

/**
 * The identifier fields in the order that picks a record's key: the first one a webhook carries
 * wins. Contract comes first because most events are about a contract and the mixed ones
 * (OrderSucceeded, DebitAuthCancelled, PaymentEscalated, PaymentEscalationReset) name one, so all
 * of a contract's events share a partition and keep their arrival order.
 */
export const KEY_PRIORITY = WEBHOOK_FIELDS.filter((f) => f.kind === 'id');

/**
 * The Kafka key of a webhook record: `<ResourceType>:<id>` of its primary identifier (the same
 * form as the snapshot keys, so with equal partition counts both land on the same partition
 * number), else the event_id, which spreads events without identifiers evenly.
 */
export function recordKey(fields: Readonly<Record<string, string | number>>, eventId: string): string {
  for (const field of KEY_PRIORITY) {
    const id = fields[field.avro];
    if (typeof id === 'string') return `${field.resourceType}:${id}`;
  }
  return eventId;
}
