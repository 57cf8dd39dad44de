import { describe, expect, it } from 'vitest';
import { KEY_PRIORITY, recordKey } from './record-key.js';

describe('recordKey', () => {
  it('keys by the contract when a webhook names a contract and a customer', () => {
    expect(recordKey({ customer_id: 'k1', contract_id: 'c1', payment_escalation_process_id: 'p1' }, 'e')).toBe('Contract:c1');
  });

  it('falls through the priority order', () => {
    expect(recordKey({ customer_id: 'k1' }, 'e')).toBe('Customer:k1');
    expect(recordKey({ old_invoice_draft_id: 'd1', new_invoice_draft_id: 'd2' }, 'e')).toBe('InvoiceDraft:d1');
    expect(recordKey({ payment_transaction_id: 't1', trigger_days: 4 }, 'e')).toBe('PaymentTransaction:t1');
  });

  it('uses the event_id when the webhook carries no identifier', () => {
    expect(recordKey({ your_customer_id: 'y1', trigger_days: 3 }, 'ev-1')).toBe('ev-1');
  });

  it('starts with Contract, then Customer, and lists only identifier fields', () => {
    expect(KEY_PRIORITY.slice(0, 2).map((f) => f.name)).toEqual(['ContractId', 'CustomerId']);
    expect(KEY_PRIORITY.every((f) => f.kind === 'id' && f.resourceType)).toBe(true);
  });
});
