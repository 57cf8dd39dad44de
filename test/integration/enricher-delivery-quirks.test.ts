import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { expectExactVersions } from './enricher-expectations.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness({ sim: { seed: 11, rateLimit: { requestsPerSecond: 0 }, delivery: { retryBaseDelayMs: 50, duplicateRate: 1, reorderRate: 0.5, reorderWindowMs: 300, lateRate: 0.2, lateDelayMs: 500 } } });
});
afterAll(async () => {
  await h?.stop();
});

it('duplicated, late and reordered deliveries give exact versions of the true states', async () => {
  const signups = Array.from({ length: 5 }, () => h.sim.billing.signup({ trial: true }));
  for (const s of signups) {
    h.sim.billing.endTrial(s.contractId);
    h.sim.billing.changePlan(s.contractId, 2);
    h.sim.billing.changeCustomer(s.customerId);
  }
  await waitFor(() => h.sim.stats().webhooks.pending === 0, { timeoutMs: 30_000, what: 'all deliveries done' });
  await waitFor(
    () => signups.every((s) => JSON.stringify(JSON.parse(h.versionsOf('Contract', s.contractId).at(-1)?.body ?? 'null')) === JSON.stringify(h.sim.current('Contract', s.contractId))),
    { timeoutMs: 30_000, what: 'contracts at their current state' },
  );
  for (const s of signups) {
    expectExactVersions(h, 'Contract', s.contractId);
    expectExactVersions(h, 'Customer', s.customerId);
    expectExactVersions(h, 'Order', s.orderId);
  }
  expect(h.deadLetters).toEqual([]);
});
