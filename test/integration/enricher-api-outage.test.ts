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

it('while the API answers 5xx the partitions pause; afterwards everything completes and nothing went to the DLQ', async () => {
  const s = h.sim.billing.signup({ trial: false });
  await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'v1' });

  h.sim.setFaults({ errorRate: 1 });
  h.sim.billing.changePlan(s.contractId, 1);
  const other = h.sim.billing.signup({ trial: false });
  // The API is hit (and fails) repeatedly: the enricher is retrying, not dropping.
  await waitFor(() => (h.sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.['500'] ?? 0) + (h.sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.['502'] ?? 0) + (h.sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.['503'] ?? 0) >= 3, { what: 'failing fetches' });
  expect(h.versionsOf('Contract', s.contractId)).toHaveLength(1);

  h.sim.setFaults({ errorRate: 0 });
  await waitFor(() => h.versionsOf('Contract', s.contractId).length === 2 && h.versionsOf('Contract', other.contractId).length === 1, { timeoutMs: 30_000, what: 'caught up' });
  expectExactVersions(h, 'Contract', s.contractId);
  expect(h.deadLetters).toEqual([]);
});
