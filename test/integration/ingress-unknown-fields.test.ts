import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

let t: TestIngress;
beforeAll(async () => {
  t = await startTestIngress();
});
afterAll(async () => {
  await t?.stop();
});

describe('ingress: unknown events and unknown fields round-trip', () => {
  it('keeps an unknown event, its unknown fields and the body byte for byte', async () => {
    // Odd spacing, key order, a unicode escape, a big number and nested data: the body must come back unchanged.
    const body = '{ "Event" : "SubscriptionPaused",\n  "InvoiceDraftId":"d-1", "PausedBy": {"who": "portal", "at": [1, 2.50]},\n "Amount": 12345678901234567890, "Note":"caf\\u00e9 ✓", "ContractId": "c-9" }';
    const answer = await t.post(body);
    expect(answer.status).toBe(200);

    const [stored] = await t.readAll();
    expect(stored?.value.event_id).toBe(answer.body.event_id);
    expect(stored?.value.event).toBe('SubscriptionPaused');
    expect(stored?.value.body).toBe(body);
    expect(stored?.value.contract_id).toBe('c-9');
    expect(stored?.key).toBe('Contract:c-9');
    // (The big number goes through JSON.parse on both sides: the body field keeps its exact digits.)
    expect(JSON.parse(stored?.value.extra_fields as string)).toEqual(JSON.parse('{"InvoiceDraftId":"d-1","PausedBy":{"who":"portal","at":[1,2.5]},"Amount":12345678901234567890,"Note":"café ✓"}'));
    // Every known field is present in the record, null when the body lacks it.
    expect(stored?.value.customer_id).toBeNull();
    expect(stored?.value.trigger_days).toBeNull();
  });
});
