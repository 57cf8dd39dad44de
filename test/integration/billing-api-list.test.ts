import { afterEach, describe, expect, it } from 'vitest';
import { ApiRejectedError } from '../../src/billing-api/api-errors.js';
import { createBillingApiClient } from '../../src/billing-api/client.js';
import { startSimulator } from '../../src/simulator/simulator.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('billing API lists (backfill)', () => {
  it('pages through every live object with an inclusive from cursor, ordered by Id, until a short page', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, unknownFields: true });
    const api = createBillingApiClient({ ...sim.clientOptions() });
    cleanup.push(() => sim.stop(), () => api.close());
    for (let i = 0; i < 5; i++) sim.billing.signup();
    const pages: string[][] = [];
    let from: string | undefined;
    for (;;) {
      const page = await api.listResources('Customer', { ...(from ? { from } : {}), take: 2 });
      const ids = page.items.map((item) => (JSON.parse(item) as { Id: string }).Id);
      pages.push(ids);
      if (page.last) break;
      from = ids.at(-1);
    }
    const sorted = [...sim.ids('Customer')].sort();
    // Each page after the first starts with the previous page's last object.
    expect(pages).toEqual([sorted.slice(0, 2), sorted.slice(1, 3), sorted.slice(2, 4), sorted.slice(3, 5)].concat([[sorted[4] as string]]));
  });

  it('pages with skip/take, and the service refuses skip past 1000 (ApiRejectedError, 400)', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 } });
    const api = createBillingApiClient({ ...sim.clientOptions() });
    cleanup.push(() => sim.stop(), () => api.close());
    for (let i = 0; i < 3; i++) sim.billing.signup();
    expect((await api.listResources('Contract', { skip: 1, take: 500 })).items).toHaveLength(2);
    expect((await api.listResources('Contract', { skip: 1000, take: 500 })).items).toEqual([]);
    const refused = await api.listResources('Contract', { skip: 1001 }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApiRejectedError);
    expect((refused as ApiRejectedError).context.status).toBe(400);
  });

  it('refuses a page size above the documented 500 before asking (the service would cut it)', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 } });
    const api = createBillingApiClient({ ...sim.clientOptions() });
    cleanup.push(() => sim.stop(), () => api.close());
    await expect(api.listResources('Contract', { take: 10_000 })).rejects.toBeInstanceOf(RangeError);
    expect(sim.stats().requests.total).toBe(0);
  });

  it('the sandbox cuts take to 500 and refuses `from` on invoice drafts (skip/take only)', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 } });
    cleanup.push(() => sim.stop());
    for (let i = 0; i < 600; i++) sim.billing.signup();
    const token = await fetch(`${sim.authUrl}/oauth/token/`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` }, body: 'grant_type=client_credentials' });
    const { access_token } = (await token.json()) as { access_token: string };
    const get = (path: string) => fetch(`${sim.baseUrl}/api/v1/${path}`, { headers: { authorization: `Bearer ${access_token}` } });
    expect(((await (await get('Customers?take=501')).json()) as unknown[]).length).toBe(500);
    const drafts = await get('InvoiceDrafts?from=000000000000000000000000&take=5');
    expect(drafts.status).toBe(400);
    expect(await drafts.json()).toHaveProperty('Message');
  });
});
