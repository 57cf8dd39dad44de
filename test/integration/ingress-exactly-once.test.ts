import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PIPELINE_PARTITIONS } from '../../src/wire/topics.js';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

let t: TestIngress;
beforeAll(async () => {
  t = await startTestIngress();
});
afterAll(async () => {
  await t?.stop();
});

const EVENTS = ['ContractChanged', 'CustomerChanged', 'PaymentFailed', 'InvoiceCreated'] as const;

function webhook(i: number): Record<string, unknown> {
  const event = EVENTS[i % EVENTS.length] as string;
  if (event === 'CustomerChanged') return { Event: event, CustomerId: `k-${i}` };
  if (event === 'PaymentFailed') return { Event: event, PaymentTransactionId: `t-${i}` };
  if (event === 'InvoiceCreated') return { Event: event, InvoiceId: `i-${i}` };
  return { Event: event, ContractId: `c-${i}` };
}

describe('ingress: every 2xx webhook is in the topic exactly once', () => {
  it('writes 1,000 concurrent posts once each, with unique event_ids, exact bodies and keys', async () => {
    const bodies = Array.from({ length: 1000 }, (_, i) => JSON.stringify(webhook(i)));
    const answers = await Promise.all(bodies.map((body) => t.post(body)));

    expect(answers.map((a) => a.status)).toEqual(bodies.map(() => 200));
    const eventIds = answers.map((a) => a.body.event_id as string);
    expect(new Set(eventIds).size).toBe(1000);
    for (const id of eventIds) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    expect(await t.recordCount()).toBe(1000);
    const records = await t.readAll();
    expect(records).toHaveLength(1000);
    const byEventId = new Map(records.map((r) => [r.value.event_id, r]));
    expect(byEventId.size).toBe(1000);

    bodies.forEach((body, i) => {
      const stored = byEventId.get(eventIds[i] as string);
      expect(stored, `event ${i}`).toBeDefined();
      expect(stored?.value.body).toBe(body);
      expect(stored?.value.event).toBe(webhook(i).Event);
      expect(typeof stored?.value.received_at).toBe('number');
    });
    expect(byEventId.get(eventIds[0] as string)?.key).toBe('Contract:c-0');
    expect(byEventId.get(eventIds[1] as string)?.key).toBe('Customer:k-1');
    expect(byEventId.get(eventIds[2] as string)?.key).toBe('PaymentTransaction:t-2');
    expect(byEventId.get(eventIds[3] as string)?.key).toBe('Invoice:i-3');
    // The topic was created with the documented partition count, and the keys spread over it.
    expect(new Set(records.map((r) => r.partition)).size).toBe(PIPELINE_PARTITIONS);

    const metrics = await t.metrics.getSingleMetricAsString('billing_loader_ingress_requests_total');
    expect(metrics).toContain('billing_loader_ingress_requests_total{status="200"} 1000');
  });
});
