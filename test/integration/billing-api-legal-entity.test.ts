import { afterEach, describe, expect, it } from 'vitest';
import { ApiAuthError } from '../../src/billing-api/api-errors.js';
import { createBillingApiClient } from '../../src/billing-api/client.js';
import { startSimulator } from '../../src/simulator/simulator.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

// Accounts with an entity hierarchy need `X-SELECTED-LEGAL-ENTITY-ID` on every request
// (BILLING_LEGAL_ENTITY_ID); the sandbox can require it and answers 403 without it.
describe('the legal entity header', () => {
  it('is sent on every resource and list request when set, and the sandbox then answers', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, legalEntityId: 'entity-42' });
    const api = createBillingApiClient({ ...sim.clientOptions(), legalEntityId: 'entity-42' });
    cleanup.push(() => sim.stop(), () => api.close());
    const { contractId } = sim.billing.signup();
    expect(await api.getResource('Contract', contractId)).toMatchObject({ kind: 'found' });
    expect((await api.listResources('Customer', { take: 10 })).items).toHaveLength(1);
    expect(sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']).toEqual({ 200: 1 });
  });

  it('without it (or with another entity) the sandbox refuses with 403: a configuration problem, never a record to dead-letter', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, legalEntityId: 'entity-42' });
    const none = createBillingApiClient({ ...sim.clientOptions() });
    const other = createBillingApiClient({ ...sim.clientOptions(), legalEntityId: 'entity-7' });
    cleanup.push(() => sim.stop(), () => none.close(), () => other.close());
    const { contractId } = sim.billing.signup();
    for (const api of [none, other]) {
      const err = await api.getResource('Contract', contractId).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiAuthError);
      expect((err as ApiAuthError).context.status).toBe(403);
    }
  });

  it('a sandbox without an entity hierarchy ignores the header', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 } });
    const api = createBillingApiClient({ ...sim.clientOptions(), legalEntityId: 'entity-42' });
    cleanup.push(() => sim.stop(), () => api.close());
    const { contractId } = sim.billing.signup();
    expect(await api.getResource('Contract', contractId)).toMatchObject({ kind: 'found' });
  });
});
