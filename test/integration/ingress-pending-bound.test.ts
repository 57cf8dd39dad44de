import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

/** The pending-bytes bound refuses webhooks only while others wait; it never starves one. */
let t: TestIngress;
beforeAll(async () => {
  t = await startTestIngress({ ingressMaxPendingBytes: 64 });
});
afterAll(async () => {
  await t?.stop();
});

describe('ingress: INGRESS_MAX_PENDING_BYTES smaller than one webhook', () => {
  it('still takes each webhook when nothing else waits for the broker', async () => {
    for (const id of ['c-1', 'c-2', 'c-3']) {
      const answer = await t.post({ Event: 'ContractChanged', ContractId: id, Note: 'x'.repeat(500) });
      expect(answer.status).toBe(200);
    }
    expect(await t.recordCount()).toBe(3);
  });
});
