import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * ENRICHER_COALESCE_MS: the fetcher's fetch waits for more requests, so webhooks for one
 * resource arriving close together share one API read (the goal: at most one fetch per webhook). The
 * window is wide here (3 s) so that a loaded machine cannot spread the burst over two batches.
 */
let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness({ env: { ENRICHER_COALESCE_MS: '3000' } });
});
afterAll(async () => {
  await h?.stop();
});

const contractReads = () => Object.values(h.sim.stats().requests.byRoute['GET /api/v1/Contracts/:id'] ?? {}).reduce((a, b) => a + b, 0);

it('webhooks for one contract within the window share one read, and make one version', { timeout: 60_000 }, async () => {
  h.sim.setWebhookUrl(undefined);
  const { contractId } = h.sim.billing.signup({ trial: false });
  h.sim.setWebhookUrl(`${h.ingress.url}/webhooks`);
  h.sim.resetRequestStats();
  for (const event of ['ContractCreated', 'AccountCreated', 'ContractChanged']) h.sim.emit({ Event: event, ContractId: contractId });
  await waitFor(() => h.versionsOf('Contract', contractId).length > 0, { what: 'the contract version' });
  await h.flushEnricher();
  expect(contractReads()).toBe(1);
  const [version] = h.versionsOf('Contract', contractId);
  expect(version?.source_events).toEqual(expect.arrayContaining(['ContractCreated', 'AccountCreated', 'ContractChanged']));
});
