import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

let t: TestIngress;
beforeAll(async () => {
  t = await startTestIngress();
});
afterAll(async () => {
  await t?.stop();
});

const FIELDS = ['contract_id', 'customer_id', 'your_customer_id', 'trigger_days', 'due_date', 'payment_provider', 'payment_escalation_process_id', 'extra_fields'] as const;

describe('ingress: property names are matched ignoring letter case (spec 9.3)', () => {
  it('decodes case variants of one webhook to the same fields', async () => {
    const variants = [
      { Event: 'PaymentEscalated', ContractId: 'c1', CustomerId: 'k1', YourCustomerId: 'y1', TriggerDays: 10, DueDate: '2024-05-01T00:00:00Z', PaymentProvider: 'Card', PaymentEscalationProcessId: 'p1' },
      { event: 'PaymentEscalated', contractid: 'c1', customerid: 'k1', yourcustomerid: 'y1', triggerdays: 10, duedate: '2024-05-01T00:00:00Z', paymentprovider: 'Card', paymentescalationprocessid: 'p1' },
      { EVENT: 'PaymentEscalated', CONTRACTID: 'c1', customerId: 'k1', yourCustomerID: 'y1', TRIGGERDAYS: 10, dueDATE: '2024-05-01T00:00:00Z', PAYMENTPROVIDER: 'Card', paymentEscalationProcessID: 'p1' },
    ];
    for (const v of variants) expect((await t.post(v)).status).toBe(200);

    const records = await t.readAll();
    expect(records).toHaveLength(3);
    const projections = records.map((r) => Object.fromEntries(FIELDS.map((f) => [f, r.value[f]])));
    expect(projections[0]).toEqual({
      contract_id: 'c1',
      customer_id: 'k1',
      your_customer_id: 'y1',
      trigger_days: 10,
      due_date: '2024-05-01T00:00:00Z',
      payment_provider: 'Card',
      payment_escalation_process_id: 'p1',
      extra_fields: '{}',
    });
    expect(projections[1]).toEqual(projections[0]);
    expect(projections[2]).toEqual(projections[0]);
    expect(new Set(records.map((r) => r.key))).toEqual(new Set(['Contract:c1']));
    // The bodies themselves keep the case they arrived in.
    expect(records.map((r) => r.value.body).sort()).toEqual(variants.map((v) => JSON.stringify(v)).sort());
  });
});
