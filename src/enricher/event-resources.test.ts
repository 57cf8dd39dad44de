import { describe, expect, it } from 'vitest';
import { KNOWN_EVENTS, resourcesOf } from './event-resources.js';
import type { WebhookRecord } from '../wire/webhook-record.js';

const record = (event: string, fields: Partial<WebhookRecord> = {}): WebhookRecord => ({
  event_id: '00000000-0000-4000-8000-000000000000',
  event,
  received_at: 0,
  body: '{}',
  contract_id: null,
  customer_id: null,
  order_id: null,
  invoice_id: null,
  old_invoice_id: null,
  new_invoice_id: null,
  old_invoice_draft_id: null,
  new_invoice_draft_id: null,
  dunning_id: null,
  payment_transaction_id: null,
  payment_escalation_process_id: null,
  your_customer_id: null,
  payment_provider: null,
  expiry_date: null,
  due_date: null,
  trigger_days: null,
  entity_id: null,
  extra_fields: '{}',
  ...fields,
});

const all = {
  contract_id: 'C',
  customer_id: 'U',
  order_id: 'O',
  invoice_id: 'I',
  old_invoice_id: 'IO',
  new_invoice_id: 'IN',
  old_invoice_draft_id: 'DO',
  new_invoice_draft_id: 'DN',
  dunning_id: 'D',
  payment_transaction_id: 'T',
  payment_escalation_process_id: 'E',
};

const refs = (event: string, fields: Partial<WebhookRecord> = all) => resourcesOf(record(event, fields)).map((r) => `${r.type}:${r.id}`);

describe('resourcesOf: the catalog events (beyond the spec; their ids come in extra_fields)', () => {
  const extra = (fields: Record<string, unknown>): Partial<WebhookRecord> => ({ extra_fields: JSON.stringify(fields) });
  it.each([
    ['PlanCreated', { PlanId: 'P' }, ['Plan:P']],
    ['PlanChanged', { planid: 'P', EntityId: 'E' }, ['Plan:P']],
    ['PlanDeleted', { PlanId: 'P' }, ['Plan:P']],
    ['PlanVariantCreated', { PlanVariantId: 'V' }, ['PlanVariant:V']],
    ['PlanVariantChanged', { PLANVARIANTID: 'V' }, ['PlanVariant:V']],
    ['PlanVariantDeleted', { PlanVariantId: 'V' }, ['PlanVariant:V']],
    ['ComponentCreated', { ComponentId: 'K' }, ['Component:K']],
    ['ComponentChanged', { ComponentId: 'K' }, ['Component:K']],
    ['ComponentDeleted', { ComponentId: 'K' }, ['Component:K']],
  ])('%s reads %j', (event, fields, expected) => {
    expect(resourcesOf(record(event, extra(fields))).map((r) => `${r.type}:${r.id}`)).toEqual(expected);
  });

  it('reads nothing when the id is missing or not a string', () => {
    expect(resourcesOf(record('PlanChanged', extra({ PlanId: 7 })))).toEqual([]);
    expect(resourcesOf(record('PlanChanged', extra({})))).toEqual([]);
  });

  it('an unknown event naming a catalog id reads it too', () => {
    expect(resourcesOf(record('PlanGroupChanged', extra({ PlanGroupId: 'G' }))).map((r) => `${r.type}:${r.id}`)).toEqual(['PlanGroup:G']);
  });
});

describe('resourcesOf (docs/CONTRACT.md event table)', () => {
  it('covers the events of spec 6.2: its table has 25 (not 26: the header row is no event)', () => {
    expect(KNOWN_EVENTS).toHaveLength(25);
  });
  it.each([
    ['OrderSucceeded', ['Order:O', 'Contract:C']],
    ...['ContractCreated', 'ContractChanged', 'ContractCancelled', 'RecurringBillingApproaching', 'TrialEndApproaching', 'AccountCreated', 'PaymentBearerExpiring', 'PaymentBearerExpired', 'PaymentDataChanged', 'PaymentProcessStatusChanged', 'PaymentRegistered'].map((e) => [e, ['Contract:C']]),
    ...['CustomerCreated', 'CustomerChanged', 'CustomerDeleted', 'CustomerLocked', 'CustomerUnlocked'].map((e) => [e, ['Customer:U']]),
    ['DunningCreated', ['Dunning:D']],
    ['InvoiceCreated', ['Invoice:I']],
    ['InvoiceCorrected', ['InvoiceDraft:DO', 'InvoiceDraft:DN', 'Invoice:IO', 'Invoice:IN']],
    ['DebitAuthCancelled', ['Contract:C', 'Customer:U']],
    ['PaymentEscalationReset', ['Contract:C', 'Customer:U']],
    ['PaymentEscalated', ['Contract:C', 'Customer:U', 'PaymentEscalationProcess:E']],
    ['PaymentFailed', ['PaymentTransaction:T']],
    ['PaymentSucceeded', ['PaymentTransaction:T']],
  ] as [string, string[]][])('%s fetches %j', (event, expected) => {
    expect(refs(event)).toEqual(expected);
  });

  it('InvoiceCorrected without the deprecated invoice ids fetches only the drafts', () => {
    expect(refs('InvoiceCorrected', { old_invoice_draft_id: 'DO', new_invoice_draft_id: 'DN' })).toEqual(['InvoiceDraft:DO', 'InvoiceDraft:DN']);
  });

  it('an unknown event fetches every <KnownType>Id it carries, named or extra, in any case, but never YourCustomerId', () => {
    const r = record('SomethingNew', { contract_id: 'C', extra_fields: JSON.stringify({ yourcustomerid: 'mine', INVOICEDRAFTID: 'X', NewDunningId: 'Y', Note: 'n', OrderId: 7 }) });
    expect(resourcesOf(r).map((x) => `${x.type}:${x.id}`)).toEqual(['Contract:C', 'InvoiceDraft:X', 'Dunning:Y']);
  });

  it('an unknown event without identifiers refers to nothing (it is only recorded)', () => {
    expect(refs('SomethingNew', {})).toEqual([]);
  });

  it('names each resource once even when two fields carry the same id', () => {
    expect(refs('InvoiceCorrected', { old_invoice_draft_id: 'D', new_invoice_draft_id: 'D' })).toEqual(['InvoiceDraft:D']);
  });
});
