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

it('stopping while a partition is paused leaves no timer that throws later', async () => {
  const own = await startEnricherHarness();
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    // A first version while the API works: the client holds its token before the outage.
    const s = own.sim.billing.signup({ trial: false });
    await waitFor(() => own.versionsOf('Contract', s.contractId).length === 1, { what: 'v1' });
    own.sim.setFaults({ errorRate: 1 });
    own.sim.billing.changePlan(s.contractId, 1);
    const failed = () => Object.entries(own.sim.stats().requests.byRoute['GET /api/v1/Contracts/:id'] ?? {}).reduce((n, [status, count]) => (status.startsWith('5') ? n + count : n), 0);
    // Two failed attempts make a paused partition, whose resume is due 0.5-1 s later.
    await waitFor(() => failed() >= 4, { what: 'a partition paused more than once' });
    await own.stop();
    await new Promise((resolve) => setTimeout(resolve, 1500));
  } finally {
    process.off('uncaughtException', onUncaught);
  }
  expect(uncaught).toEqual([]);
});
