/**
 * The decoded value of a `<prefix>.webhooks` record (schemas/webhook.avsc), as the enricher
 * reads it. Identifier fields are null when the webhook did not carry them.
 */
export interface WebhookRecord {
  event_id: string;
  event: string;
  received_at: number;
  body: string;
  contract_id: string | null;
  customer_id: string | null;
  order_id: string | null;
  invoice_id: string | null;
  old_invoice_id: string | null;
  new_invoice_id: string | null;
  old_invoice_draft_id: string | null;
  new_invoice_draft_id: string | null;
  dunning_id: string | null;
  payment_transaction_id: string | null;
  payment_escalation_process_id: string | null;
  /** JSON object text of the top-level fields the schema does not name, with their original names. */
  extra_fields: string;
}
