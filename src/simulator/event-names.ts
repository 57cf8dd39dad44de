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
 * A webhook body as spec 6.1 item 2 describes it: the field Event and identifier fields only
 * (strings, except TriggerDays, an integer).
 */
export interface WebhookPayload {
  Event: string;
  [field: string]: string | number;
}
