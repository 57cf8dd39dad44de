import type { ResourceType } from '../billing-api/resource-types.js';
import type { WebhookFieldName } from '../wire/webhook-fields.js';
import type { WebhookRecord } from '../wire/webhook-record.js';

export interface ResourceRef {
  type: ResourceType;
  id: string;
}

/** The record fields that carry a resource identifier (WEBHOOK_FIELDS of kind `id`). */
type IdField = WebhookFieldName<'id'>;

/** Which record field names which resource type. `your_customer_id` is the client's own id: never fetched. */
const FIELD_TYPE: Record<IdField, ResourceType> = {
  contract_id: 'Contract',
  customer_id: 'Customer',
  order_id: 'Order',
  invoice_id: 'Invoice',
  old_invoice_id: 'Invoice',
  new_invoice_id: 'Invoice',
  old_invoice_draft_id: 'InvoiceDraft',
  new_invoice_draft_id: 'InvoiceDraft',
  dunning_id: 'Dunning',
  payment_transaction_id: 'PaymentTransaction',
  payment_escalation_process_id: 'PaymentEscalationProcess',
};

const CONTRACT_ONLY: IdField[] = ['contract_id'];
const CUSTOMER_ONLY: IdField[] = ['customer_id'];

/** docs/CONTRACT.md, "Which resources an event refers to" (spec section 6.2). */
const EVENT_FIELDS: Record<string, IdField[]> = {
  OrderSucceeded: ['order_id', 'contract_id'],
  ContractCreated: CONTRACT_ONLY,
  ContractChanged: CONTRACT_ONLY,
  ContractCancelled: CONTRACT_ONLY,
  RecurringBillingApproaching: CONTRACT_ONLY,
  TrialEndApproaching: CONTRACT_ONLY,
  AccountCreated: CONTRACT_ONLY,
  PaymentBearerExpiring: CONTRACT_ONLY,
  PaymentBearerExpired: CONTRACT_ONLY,
  PaymentDataChanged: CONTRACT_ONLY,
  PaymentProcessStatusChanged: CONTRACT_ONLY,
  PaymentRegistered: CONTRACT_ONLY,
  CustomerCreated: CUSTOMER_ONLY,
  CustomerChanged: CUSTOMER_ONLY,
  CustomerDeleted: CUSTOMER_ONLY,
  CustomerLocked: CUSTOMER_ONLY,
  CustomerUnlocked: CUSTOMER_ONLY,
  DunningCreated: ['dunning_id'],
  InvoiceCreated: ['invoice_id'],
  // The deprecated invoice ids are fetched when present (docs/CONTRACT.md).
  InvoiceCorrected: ['old_invoice_draft_id', 'new_invoice_draft_id', 'old_invoice_id', 'new_invoice_id'],
  DebitAuthCancelled: ['contract_id', 'customer_id'],
  PaymentEscalationReset: ['contract_id', 'customer_id'],
  PaymentEscalated: ['contract_id', 'customer_id', 'payment_escalation_process_id'],
  PaymentFailed: ['payment_transaction_id'],
  PaymentSucceeded: ['payment_transaction_id'],
};

/**
 * Events beyond the spec whose identifier is not one of the webhook record's fields: read from
 * `extra_fields`, by name in any letter case. The catalog events; their id field names are
 * assumed from the service's other events (docs/CONTRACT.md).
 */
const EXTRA_EVENT_FIELDS: Record<string, [field: string, type: ResourceType][]> = {
  PlanCreated: [['PlanId', 'Plan']],
  PlanChanged: [['PlanId', 'Plan']],
  PlanDeleted: [['PlanId', 'Plan']],
  PlanVariantCreated: [['PlanVariantId', 'PlanVariant']],
  PlanVariantChanged: [['PlanVariantId', 'PlanVariant']],
  PlanVariantDeleted: [['PlanVariantId', 'PlanVariant']],
  ComponentCreated: [['ComponentId', 'Component']],
  ComponentChanged: [['ComponentId', 'Component']],
  ComponentDeleted: [['ComponentId', 'Component']],
};

/** The events of spec 6.2. */
export const KNOWN_EVENTS: readonly string[] = Object.keys(EVENT_FIELDS);
/** The catalog events beyond the spec. */
export const CATALOG_EVENTS: readonly string[] = Object.keys(EXTRA_EVENT_FIELDS);

/**
 * An unknown event's extra field names a resource when it is `<KnownType>Id`, optionally with
 * an Old/New prefix, in any letter case (spec 9.3). `YourCustomerId` is excluded by the anchor.
 */
const EXTRA_ID_FIELD = /^(?:old|new)?(contract|customer|order|invoice|invoicedraft|dunning|paymenttransaction|paymentescalationprocess|plan|planvariant|plangroup|component)id$/i;

const TYPE_BY_LOWER: Record<string, ResourceType> = {
  contract: 'Contract',
  customer: 'Customer',
  order: 'Order',
  invoice: 'Invoice',
  invoicedraft: 'InvoiceDraft',
  dunning: 'Dunning',
  paymenttransaction: 'PaymentTransaction',
  paymentescalationprocess: 'PaymentEscalationProcess',
  plan: 'Plan',
  planvariant: 'PlanVariant',
  plangroup: 'PlanGroup',
  component: 'Component',
};

/**
 * The resources a webhook refers to, each once, in table order. A known event uses its own
 * fields only; an unknown event uses every identifier field it carries, named or extra.
 * Identifiers are taken as given (the ingress validated them); a forged one costs a fetch
 * that answers 404 and creates no version.
 */
export function resourcesOf(record: WebhookRecord): ResourceRef[] {
  const refs: ResourceRef[] = [];
  const add = (type: ResourceType, id: unknown) => {
    if (typeof id !== 'string' || id === '') return;
    if (!refs.some((r) => r.type === type && r.id === id)) refs.push({ type, id });
  };
  const fields = EVENT_FIELDS[record.event];
  if (fields) {
    for (const f of fields) add(FIELD_TYPE[f], record[f]);
    return refs;
  }
  const extraFields = EXTRA_EVENT_FIELDS[record.event];
  if (extraFields) {
    const extra = Object.entries(parseExtra(record.extra_fields));
    for (const [name, type] of extraFields) for (const [k, v] of extra) if (k.toLowerCase() === name.toLowerCase()) add(type, v);
    return refs;
  }
  for (const f of Object.keys(FIELD_TYPE) as IdField[]) add(FIELD_TYPE[f], record[f]);
  for (const [name, value] of Object.entries(parseExtra(record.extra_fields))) {
    const m = EXTRA_ID_FIELD.exec(name);
    if (m?.[1]) add(TYPE_BY_LOWER[m[1].toLowerCase()] as ResourceType, value);
  }
  return refs;
}

function parseExtra(text: string): Record<string, unknown> {
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    // extra_fields is written by our ingress as JSON; unparsable means no extra identifiers.
    return {};
  }
}
