import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { expectExactVersions } from './enricher-expectations.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness();
});
afterAll(async () => {
  await h?.stop();
});

it('two enricher instances on one group write gap-free versions, one writer per resource, through rebalances', async () => {
  const signups = Array.from({ length: 12 }, () => h.sim.billing.signup({ trial: false }));
  // A second and a third instance join while changes flow: partitions move under load.
  const joining = (async () => {
    await h.startEnricher();
    await h.startEnricher();
  })();
  for (let round = 1; round <= 4; round++) {
    for (const s of signups) h.sim.billing.changePlan(s.contractId, round % 3);
  }
  await joining;
  for (const s of signups) h.sim.billing.changeCustomer(s.customerId);
  await waitFor(
    () => signups.every((s) => JSON.parse(h.versionsOf('Contract', s.contractId).at(-1)?.body ?? 'null')?.PlanId === h.sim.current('Contract', s.contractId)?.PlanId &&
      h.versionsOf('Customer', s.customerId).at(-1)?.content_hash !== undefined &&
      JSON.stringify(JSON.parse(h.versionsOf('Customer', s.customerId).at(-1)?.body ?? 'null')) === JSON.stringify(h.sim.current('Customer', s.customerId))),
    { timeoutMs: 60_000, what: 'every resource at its current state' },
  );
  for (const s of signups) {
    expectExactVersions(h, 'Contract', s.contractId);
    expectExactVersions(h, 'Customer', s.customerId);
  }
  expect(h.deadLetters).toEqual([]);
});
