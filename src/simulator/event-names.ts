/**
 * Every event of spec section 6.2, in the spec's order. The table has 25 events (a count of 26
 * includes its header row); all of them occur in the default scenario. AccountCreated is
 * deprecated upstream (replaced by ContractCreated) but still sent, so the simulator sends it too.
 */
export const EVENT_NAMES = [
  'OrderSucceeded',
  'ContractCreated',
  'ContractChanged',
  'ContractCancelled',
  'CustomerCreated',
  'CustomerChanged',
  'CustomerDeleted',
  'CustomerLocked',
  'CustomerUnlocked',
  'DunningCreated',
  'InvoiceCreated',
  'InvoiceCorrected',
  'RecurringBillingApproaching',
  'TrialEndApproaching',
  'AccountCreated',
  'PaymentBearerExpiring',
  'PaymentBearerExpired',
  'DebitAuthCancelled',
  'PaymentDataChanged',
  'PaymentEscalated',
  'PaymentEscalationReset',
  'PaymentFailed',
  'PaymentSucceeded',
  'PaymentProcessStatusChanged',
  'PaymentRegistered',
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/**
 * Events the service's public documentation lists beyond the spec's 25 (docs/SIMULATOR.md,
 * "Webhooks"): the contract's deletion after its customer's, edits of contract data, and
 * changes of the product catalog. The sandbox sends all of them.
 */
export const EXTRA_EVENT_NAMES = [
  'ContractDeleted',
  'ContractDataChanged',
  'PlanCreated',
  'PlanChanged',
  'PlanDeleted',
  'PlanVariantCreated',
  'PlanVariantChanged',
  'PlanVariantDeleted',
  'ComponentCreated',
  'ComponentChanged',
  'ComponentDeleted',
] as const;

/**
 * A webhook body: the field Event and identifier fields (spec 6.1 item 2: strings, except
 * TriggerDays, an integer), plus what the service adds: `EntityId` on every event and, on
 * InvoiceCorrected, the array `NewInvoiceDraftIds`.
 */
export interface WebhookPayload {
  Event: string;
  [field: string]: string | number | string[];
}
