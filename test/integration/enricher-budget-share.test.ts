import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ResourceReader } from '../../src/enricher/resource-reader.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

// BILLING_API_REQUESTS_PER_SECOND is the deployment's total: each enricher instance sets its
// client's share to the fraction of the request partitions it owns, at every rebalance.
const shares: number[] = [];
let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness({
    reader: (_sim, api): ResourceReader => ({ getResource: (type, id) => api.getResource(type, id), setRequestShare: (share) => void shares.push(share) }),
  });
});
afterAll(async () => {
  await h?.stop();
});

it('one instance takes the whole budget; two share it by the partitions each owns', { timeout: 120_000 }, async () => {
  await waitFor(() => shares.length >= 1, { what: 'the first assignment' });
  expect(shares).toEqual([1]);
  await h.startEnricher();
  // Both instances rejoin; the six partitions are split between them.
  const split = () => shares.length >= 3 && shares.slice(-2).every((s) => s > 0 && s < 1) && Math.abs(shares.slice(-2).reduce((a, b) => a + b, 0) - 1) < 1e-9;
  await waitFor(split, { timeoutMs: 90_000, what: 'the two instances splitting the partitions' });
  expect(shares.slice(-2).reduce((a, b) => a + b, 0)).toBeCloseTo(1);
});
