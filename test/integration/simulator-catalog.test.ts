import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';

/**
 * The product catalog at the service's paths (Plans, PlanVariants, PlanGroups, Components):
 * every plan a contract names is served with its name and price, invoices are priced from it,
 * and its changes are announced by the catalog events (docs/SIMULATOR.md, "Catalog").
 */
let sim: Simulator;
let token: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 8, rateLimit: { requestsPerSecond: 0 } });
  await sim.runScenario({ customers: 24, spreadDays: 60 });
  const res = await fetch(`${sim.authUrl}/oauth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(() => sim.stop());

async function get<T = Record<string, unknown>>(path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${sim.baseUrl}/api/v1/${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as T };
}

type Body = Record<string, unknown>;

describe('the catalog', () => {
  it('serves plan groups, plans, plan variants and components, single and as lists, in any letter case of the path', async () => {
    for (const [path, type] of [['PlanGroups', 'PlanGroup'], ['Plans', 'Plan'], ['PlanVariants', 'PlanVariant'], ['Components', 'Component']] as const) {
      const list = await get<Body[]>(path);
      expect(list.status).toBe(200);
      const live = sim.ids(type).filter((id) => sim.current(type, id));
      expect(list.body.map((b) => b.Id)).toEqual(live);
      expect(live.length).toBeGreaterThan(0);
      for (const id of live) expect((await get(`${path}/${id}`)).body).toEqual(sim.current(type, id));
      expect((await get(`${path.toLowerCase()}/${live[0]}`)).status).toBe(200);
    }
    const plan = (await get<Body[]>('Plans')).body[0]!;
    expect(plan).toMatchObject({ PlanGroupId: expect.stringMatching(/^[0-9a-f]{24}$/), Name: { _c: expect.any(String) }, TrialPeriod: { Unit: 'Day', Quantity: expect.any(Number) } });
    const variant = (await get<Body[]>('PlanVariants')).body[0]!;
    expect(variant).toMatchObject({ PlanId: expect.any(String), RecurringFee: expect.any(Number), FeePeriod: { Unit: 'Month', Quantity: 1 }, BillingPeriod: { Unit: 'Month', Quantity: 1 } });
    const component = (await get<Body[]>('Components')).body[0]!;
    expect(component).toMatchObject({ PlanGroupId: expect.any(String), Name: { _c: expect.any(String) }, PricePerUnit: expect.any(Number), FeePeriod: { Unit: 'Month', Quantity: 1 } });
  });

  it('every plan, plan variant and plan group a contract names is served, and they agree with each other', async () => {
    for (const id of sim.ids('Contract')) {
      for (const state of sim.history('Contract', id)!.states) {
        if (!state.body) continue;
        const { PlanId, PlanVariantId, PlanGroupId } = state.body;
        const variant = await get(`PlanVariants/${String(PlanVariantId)}`);
        expect(variant.status).toBe(200);
        expect(variant.body.PlanId).toBe(PlanId);
        const plan = await get(`Plans/${String(PlanId)}`);
        expect(plan.body.PlanGroupId).toBe(PlanGroupId);
        expect((await get(`PlanGroups/${String(PlanGroupId)}`)).status).toBe(200);
      }
    }
  });

  it('prices invoices at the plan variant fee and component price current when they were issued; a price rise is announced', () => {
    const rises = sim.events().filter((e) => e.payload.Event === 'PlanVariantChanged');
    expect(rises.length).toBeGreaterThan(0);
    const feeAt = (variantId: string, at: string) => sim.history('PlanVariant', variantId)!.states.filter((s) => s.simulatedAt <= at).at(-1)!.body!.RecurringFee;
    const priceAt = (componentId: string, at: string) => sim.history('Component', componentId)!.states.filter((s) => s.simulatedAt <= at).at(-1)!.body!.PricePerUnit;
    const fees = new Set<string>();
    for (const id of sim.ids('Invoice')) {
      const first = sim.history('Invoice', id)!.states[0]!;
      if (first.body!.CorrectsInvoiceId !== null) continue; // a correction discounts the original's prices
      for (const item of first.body!.Items as Body[]) {
        if (typeof item.PlanVariantId === 'string') {
          expect(item.PricePerUnit).toBe(feeAt(item.PlanVariantId, first.simulatedAt));
          fees.add(`${item.PlanVariantId}:${String(item.PricePerUnit)}`);
        } else {
          expect(item.PricePerUnit).toBe(priceAt(String(item.ComponentId), first.simulatedAt));
        }
      }
    }
    // Some variant was billed at two prices: before and after the rise.
    const variants = [...fees].map((f) => f.split(':')[0]);
    expect(new Set(variants).size).toBeLessThan(variants.length);
  });

  it('a deleted catalog object answers 404 and leaves the lists', async () => {
    const deleted = sim.events().find((e) => e.payload.Event === 'PlanVariantDeleted');
    expect(deleted).toBeDefined();
    const id = String(deleted!.payload.PlanVariantId);
    expect((await get(`PlanVariants/${id}`)).status).toBe(404);
    expect((await get<Body[]>('PlanVariants')).body.map((b) => b.Id)).not.toContain(id);
  });
});
