import { WEBHOOK_FIELDS } from './webhook-fields.js';
import type { ParsedWebhook } from './parse-webhook.js';

/** The file in schemas/ that describes a webhook record. */
export const WEBHOOK_SCHEMA_FILE = 'webhook.avsc';

/** The value of one `<prefix>.webhooks` record, as schemas/webhook.avsc declares it. */
export interface WebhookRecord {
  event_id: string;
  event: string;
  /** Milliseconds since the epoch (timestamp-millis). */
  received_at: number;
  body: string;
  /** The spec 6.2 fields, by Avro name: string or number, null when absent. */
  [field: string]: string | number | null;
  extra_fields: string;
}

export interface Delivery {
  eventId: string;
  receivedAtMs: number;
  /** The body exactly as received, decoded as UTF-8. */
  body: string;
}

/** Builds the record for a validated webhook; every known field is present (null when absent). */
export function toWebhookRecord(webhook: ParsedWebhook, delivery: Delivery): WebhookRecord {
  const record: WebhookRecord = {
    event_id: delivery.eventId,
    event: webhook.event,
    received_at: delivery.receivedAtMs,
    body: delivery.body,
    extra_fields: JSON.stringify(webhook.extra),
  };
  for (const field of WEBHOOK_FIELDS) record[field.avro] = webhook.fields[field.avro] ?? null;
  return record;
}
