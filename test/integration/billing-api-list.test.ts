import { afterEach, describe, expect, it } from 'vitest';
import { ApiRejectedError } from '../../src/billing-api/api-errors.js';
import { createBillingApiClient } from '../../src/billing-api/client.js';
import { startSimulator } from '../../src/simulator/simulator.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('billing API lists (backfill)', () => {
  it('pages through every live object with skip/take until a short page', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, unknownFields: true });
    const api = createBillingApiClient({ ...sim.clientOptions() });
    cleanup.push(() => sim.stop(), () => api.close());
    for (let i = 0; i < 5; i++) sim.billing.signup();
    const ids: string[] = [];
    const sizes: number[] = [];
    let skip: number | undefined = 0;
    while (skip !== undefined) {
      const page = await api.listResources('Customer', { skip, take: 2 });
      sizes.push(page.items.length);
      ids.push(...page.items.map((item) => (JSON.parse(item) as { Id: string }).Id));
      skip = page.nextSkip;
    }
    expect(sizes).toEqual([2, 2, 1]);
    expect(ids).toEqual(sim.ids('Customer'));
  });

  it('reports a page size the service refuses as ApiRejectedError', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 } });
    const api = createBillingApiClient({ ...sim.clientOptions() });
    cleanup.push(() => sim.stop(), () => api.close());
    await expect(api.listResources('Contract', { take: 10_000 })).rejects.toBeInstanceOf(ApiRejectedError);
  });
});
