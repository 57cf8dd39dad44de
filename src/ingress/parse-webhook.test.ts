import { describe, expect, it } from 'vitest';
import { parseWebhook, type ParseResult } from './parse-webhook.js';

const ok = (result: ParseResult) => {
  if (!result.ok) throw new Error(`expected ok, got error: ${result.error}`);
  return result.webhook;
};
const error = (text: string) => {
  const result = parseWebhook(text);
  if (result.ok) throw new Error(`expected an error for ${text}`);
  return result.error;
};

describe('parseWebhook', () => {
  it('reads the event and the spec 6.2 fields by their Avro names', () => {
    const w = ok(parseWebhook(JSON.stringify({ Event: 'PaymentEscalated', ContractId: 'c1', CustomerId: 'k1', YourCustomerId: 'y1', TriggerDays: 5, DueDate: '2024-01-02T00:00:00Z', PaymentProvider: 'Card', PaymentEscalationProcessId: 'p1' })));
    expect(w).toEqual({
      event: 'PaymentEscalated',
      fields: { contract_id: 'c1', customer_id: 'k1', your_customer_id: 'y1', trigger_days: 5, due_date: '2024-01-02T00:00:00Z', payment_provider: 'Card', payment_escalation_process_id: 'p1' },
      extra: {},
    });
  });

  it('matches property names ignoring letter case (spec 9.3)', () => {
    const a = ok(parseWebhook('{"Event":"ContractChanged","ContractId":"c1","TriggerDays":3}'));
    const b = ok(parseWebhook('{"event":"ContractChanged","contractid":"c1","TRIGGERDAYS":3}'));
    expect(b).toEqual(a);
    expect(b.fields).toEqual({ contract_id: 'c1', trigger_days: 3 });
  });

  it('accepts two case variants of one field when they agree, and rejects them when they differ', () => {
    expect(ok(parseWebhook('{"Event":"X","ContractId":"c1","contractId":"c1"}')).fields).toEqual({ contract_id: 'c1' });
    expect(error('{"Event":"X","ContractId":"c1","contractId":"c2"}')).toMatch(/ContractId appears more than once/);
    expect(error('{"Event":"X","event":"Y"}')).toMatch(/Event appears more than once/);
  });

  it('keeps unknown events and unknown fields, with original names and values', () => {
    const w = ok(parseWebhook('{"Event":"SomethingNew","InvoiceDraftId":"d1","Nested":{"a":[1,2]},"Flag":true,"__proto__":{"x":1}}'));
    expect(w.event).toBe('SomethingNew');
    expect(w.fields).toEqual({});
    expect(Object.keys(w.extra)).toEqual(['InvoiceDraftId', 'Nested', 'Flag', '__proto__']);
    expect(JSON.parse(JSON.stringify(w.extra))).toEqual(JSON.parse('{"InvoiceDraftId":"d1","Nested":{"a":[1,2]},"Flag":true,"__proto__":{"x":1}}'));
    expect(Object.getPrototypeOf(w.extra)).toBe(Object.prototype);
  });

  it('tolerates a leading byte order mark', () => {
    expect(ok(parseWebhook('\uFEFF{"Event":"X"}')).event).toBe('X');
  });

  it.each([
    ['{"Event":', /not valid JSON/],
    ['', /not valid JSON/],
    ['[{"Event":"X"}]', /must be a JSON object, got an array/],
    ['"Event"', /must be a JSON object, got a string/],
    ['42', /must be a JSON object, got a number/],
    ['null', /must be a JSON object, got null/],
    ['{}', /missing field Event/],
    ['{"ContractId":"c1"}', /missing field Event/],
    ['{"Event":7}', /Event must be a string, got a number/],
    ['{"Event":null}', /Event must be a string, got null/],
    ['{"Event":""}', /Event must not be empty/],
    ['{"Event":"X","ContractId":12}', /ContractId must be a string, got a number/],
    ['{"Event":"X","customerid":{"id":"k"}}', /CustomerId must be a string, got an object/],
    ['{"Event":"X","OrderId":null}', /OrderId must be a string, got null/],
    ['{"Event":"X","InvoiceId":["i"]}', /InvoiceId must be a string, got an array/],
    ['{"Event":"X","DunningId":""}', /DunningId must not be empty/],
    ['{"Event":"X","NewInvoiceDraftId":""}', /NewInvoiceDraftId must not be empty/],
    ['{"Event":"X","OldInvoiceId":7}', /OldInvoiceId must be a string, got a number/],
    [`{"Event":"X","ContractId":"${'a'.repeat(257)}"}`, /ContractId is longer than 256 characters/],
    [`{"Event":"${'E'.repeat(257)}"}`, /Event is longer than 256 characters/],
    ['{"Event":"X","ContractId":"c\\n1"}', /ContractId contains control characters/],
    ['{"Event":"X","PaymentTransactionId":"p\\u00001"}', /PaymentTransactionId contains control characters/],
    ['{"Event":"Contract\\tChanged"}', /Event contains control characters/],
  ])('rejects %s', (text, message) => {
    expect(error(text)).toMatch(message);
  });

  it('accepts an identifier of exactly 256 characters and empty non-identifier strings', () => {
    expect(ok(parseWebhook(`{"Event":"X","ContractId":"${'a'.repeat(256)}","PaymentProvider":""}`)).fields).toEqual({ contract_id: 'a'.repeat(256), payment_provider: '' });
  });

  // A refused webhook is retried about a dozen times and then dropped by the sender: lost. A field
  // the loader never reads must not cause that, whatever its value.
  it.each([
    ['YourCustomerId', null],
    ['YourCustomerId', 42],
    ['PaymentProvider', { name: 'Card' }],
    ['PaymentProvider', ['Card']],
    ['ExpiryDate', false],
    ['ExpiryDate', 1735689600],
    ['DueDate', null],
    ['DueDate', { at: '2024-01-02' }],
    ['TriggerDays', '5'],
    ['TriggerDays', 1.5],
    ['TriggerDays', null],
    ['TriggerDays', 3000000000],
  ])('keeps %s = %j in extra_fields under its own name, the named field left empty', (name, value) => {
    const w = ok(parseWebhook(JSON.stringify({ Event: 'PaymentEscalated', ContractId: 'c1', [name]: value })));
    expect(w.fields).toEqual({ contract_id: 'c1' });
    expect(w.extra).toEqual({ [name]: value });
  });

  it('keeps odd strings of fields the loader never reads in their named field, as received', () => {
    const text = JSON.stringify({ Event: 'DebitAuthCancelled', ContractId: 'c1', YourCustomerId: '', PaymentProvider: 'p\u0085\n', DueDate: 'd'.repeat(300) });
    expect(ok(parseWebhook(text)).fields).toEqual({ contract_id: 'c1', your_customer_id: '', payment_provider: 'p\u0085\n', due_date: 'd'.repeat(300) });
  });

  it('keeps a lone surrogate of such a field in extra_fields, where JSON keeps it escaped (Avro strings cannot)', () => {
    const w = ok(parseWebhook('{"Event":"X","PaymentProvider":"p\\ud800"}'));
    expect(w.fields).toEqual({});
    expect(JSON.stringify(w.extra)).toBe('{"PaymentProvider":"p\\ud800"}');
  });

  it('keeps two case variants of such a field that differ: the first in its field, the other in extra_fields', () => {
    const w = ok(parseWebhook('{"Event":"X","DueDate":"a","duedate":"b","DUEDATE":"a"}'));
    expect(w.fields).toEqual({ due_date: 'a' });
    expect(w.extra).toEqual({ duedate: 'b' });
  });

  it('takes an empty or null deprecated invoice id as absent, kept in extra_fields', () => {
    const w = ok(parseWebhook('{"Event":"InvoiceCorrected","OldInvoiceId":"","NewInvoiceId":null,"OldInvoiceDraftId":"d1","NewInvoiceDraftId":"d2"}'));
    expect(w.fields).toEqual({ old_invoice_draft_id: 'd1', new_invoice_draft_id: 'd2' });
    expect(w.extra).toEqual({ OldInvoiceId: '', NewInvoiceId: null });
  });
});
