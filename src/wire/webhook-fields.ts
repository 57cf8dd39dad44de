/**
 * The payload fields of spec section 6.2 that the ingress knows by name, each with the Avro field
 * that carries it in the webhook record (schemas/webhook.avsc). Names are matched ignoring
 * letter case (spec 9.3: `contractid` and `ContractId` are the same field); every other top-level
 * field is kept, with its original name, in `extra_fields`.
 *
 * - `id`: a resource identifier (the enricher fetches it): a non-empty string, or the webhook is
 *   refused. The deprecated invoice ids may also be empty or null: taken as absent.
 * - `string`: any other string field (dates stay the ISO strings received).
 * - `int`: TriggerDays, a 32-bit integer.
 *
 * The loader reads nothing but the identifiers, so a `string` or `int` field never causes a
 * refusal (the sender would retry it and then drop the event): a value that does not fit the
 * field's Avro type is kept in `extra_fields` under its original name.
 */
export type WebhookFieldKind = 'id' | 'string' | 'int';

export interface WebhookField {
  /** The name as the spec writes it. */
  name: string;
  /** The Avro field name (snake_case). */
  avro: string;
  kind: WebhookFieldKind;
  /** For `id` fields: the canonical resource type the identifier refers to (docs/CONTRACT.md section 4). */
  resourceType?: string;
  /** Deprecated upstream (spec 6.2): may arrive empty or null, which means absent. */
  deprecated?: boolean;
}

export const WEBHOOK_FIELDS = Object.freeze([
  { name: 'ContractId', avro: 'contract_id', kind: 'id', resourceType: 'Contract' },
  { name: 'CustomerId', avro: 'customer_id', kind: 'id', resourceType: 'Customer' },
  { name: 'OrderId', avro: 'order_id', kind: 'id', resourceType: 'Order' },
  { name: 'InvoiceId', avro: 'invoice_id', kind: 'id', resourceType: 'Invoice' },
  { name: 'OldInvoiceId', avro: 'old_invoice_id', kind: 'id', resourceType: 'Invoice', deprecated: true },
  { name: 'NewInvoiceId', avro: 'new_invoice_id', kind: 'id', resourceType: 'Invoice', deprecated: true },
  { name: 'OldInvoiceDraftId', avro: 'old_invoice_draft_id', kind: 'id', resourceType: 'InvoiceDraft' },
  { name: 'NewInvoiceDraftId', avro: 'new_invoice_draft_id', kind: 'id', resourceType: 'InvoiceDraft' },
  { name: 'DunningId', avro: 'dunning_id', kind: 'id', resourceType: 'Dunning' },
  { name: 'PaymentTransactionId', avro: 'payment_transaction_id', kind: 'id', resourceType: 'PaymentTransaction' },
  { name: 'PaymentEscalationProcessId', avro: 'payment_escalation_process_id', kind: 'id', resourceType: 'PaymentEscalationProcess' },
  { name: 'YourCustomerId', avro: 'your_customer_id', kind: 'string' },
  { name: 'PaymentProvider', avro: 'payment_provider', kind: 'string' },
  { name: 'ExpiryDate', avro: 'expiry_date', kind: 'string' },
  { name: 'DueDate', avro: 'due_date', kind: 'string' },
  { name: 'TriggerDays', avro: 'trigger_days', kind: 'int' },
  // Not in the spec; every payload of the real service carries it (docs/CONTRACT.md section 3).
  { name: 'EntityId', avro: 'entity_id', kind: 'string' },
] as const satisfies readonly WebhookField[]);

/** The Avro names of the known fields of one kind. */
export type WebhookFieldName<K extends WebhookFieldKind = WebhookFieldKind> = Extract<(typeof WEBHOOK_FIELDS)[number], { kind: K }>['avro'];

/** The event-name field every body must carry (spec 6.1 rule 2). */
export const EVENT_FIELD = 'Event';

/** Longest identifier or string field accepted, in characters (docs/CONTRACT.md section 3). */
export const MAX_FIELD_LENGTH = 256;

const byLowerName = new Map(WEBHOOK_FIELDS.map((f) => [f.name.toLowerCase(), f]));

/** The known field a property name denotes, whatever its letter case. */
export function knownField(propertyName: string): WebhookField | undefined {
  return byLowerName.get(propertyName.toLowerCase());
}
