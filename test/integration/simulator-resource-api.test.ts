import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_PATHS, RESOURCE_TYPES } from '../../src/simulator/resource-types.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { UNKNOWN_FIELDS } from '../../src/simulator/body-presentation.js';

let sim: Simulator;
let accessToken: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 21, rateLimit: { requestsPerSecond: 0 }, escalationSettings: true });
  await sim.runScenario({ customers: 12 });
  const res = await fetch(`${sim.authUrl}/oauth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  accessToken = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(() => sim.stop());

const get = async (path: string, auth: 'header' | 'query' | 'none' = 'header') => {
  const url = `${sim.baseUrl}/api/v1/${path}${auth === 'query' ? `${path.includes('?') ? '&' : '?'}access_token=${encodeURIComponent(accessToken)}` : ''}`;
  const res = await fetch(url, auth === 'header' ? { headers: { authorization: `Bearer ${accessToken}` } } : {});
  return { status: res.status, headers: res.headers, body: (await res.json()) as unknown };
};

describe('resource endpoints (spec 4.2, 5)', () => {
  it('answers 401 without a token or with an unknown one', async () => {
    const contractId = sim.ids('Contract')[0]!;
    const none = await get(`Contracts/${contractId}`, 'none');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const forged = await fetch(`${sim.baseUrl}/api/v1/Contracts/${contractId}`, { headers: { authorization: 'Bearer forged' } });
    expect(forged.status).toBe(401);
  });

  it('accepts the token in the Authorization header and in the access_token query parameter', async () => {
    const contractId = sim.ids('Contract')[0]!;
    const viaHeader = await get(`Contracts/${contractId}`, 'header');
    const viaQuery = await get(`Contracts/${contractId}`, 'query');
    expect(viaHeader.status).toBe(200);
    expect(viaQuery.status).toBe(200);
    expect(viaQuery.body).toEqual(viaHeader.body);
  });

  it('serves every resource type by id with the current state', async () => {
    for (const type of RESOURCE_TYPES) {
      const ids = sim.ids(type).filter((id) => sim.current(type, id));
      expect(ids.length, type).toBeGreaterThan(0);
      const r = await get(`${RESOURCE_PATHS[type]}/${ids[0]}`);
      expect(r.status, type).toBe(200);
      expect(r.body).toEqual(sim.current(type, ids[0]!));
      expect((r.body as { Id: string }).Id).toMatch(/^[0-9a-f]{24}$/);
    }
  });

  it('returns realistic contract bodies: PascalCase, .NET UTC timestamps, the customer by CustomerId, phases, plan, balance, currency', async () => {
    const c = (await get(`Contracts/${sim.ids('Contract')[0]}`)).body as Record<string, unknown>;
    expect(c).toMatchObject({ CustomerId: expect.stringMatching(/^[0-9a-f]{24}$/), PlanId: expect.any(String), Currency: expect.stringMatching(/^[A-Z]{3}$/), Balance: expect.any(Number) });
    expect(c.StartDate).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/);
    expect(Array.isArray(c.Phases) && c.Phases.length > 0).toBe(true);
    expect((await get(`Customers/${String(c.CustomerId)}`)).status).toBe(200);
  });

  it('answers 404 for unknown ids, deleted customers and identifiers that try to leave their path', async () => {
    expect((await get('Contracts/000000000000000000000000')).status).toBe(404);
    const deleted = sim.ids('Customer').find((id) => sim.history('Customer', id)?.deleted);
    expect(deleted).toBeDefined();
    const r = await get(`Customers/${deleted}`);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ Message: expect.any(String) });
    const customerId = sim.ids('Customer')[0]!;
    expect((await get(`Contracts/${encodeURIComponent(`../Customers/${customerId}`)}`)).status).toBe(404);
  });

  it('lists with skip/take paging ordered by Id, live objects only; take is cut to 500', async () => {
    const all: string[] = [];
    for (let skip = 0; ; skip += 5) {
      const page = (await get(`Customers?skip=${skip}&take=5`)).body as Array<{ Id: string }>;
      all.push(...page.map((b) => b.Id));
      if (page.length < 5) break;
    }
    expect(all).toEqual(sim.ids('Customer').filter((id) => sim.current('Customer', id)).sort());
    expect(all.length).toBeLessThan(sim.ids('Customer').length);
    expect(((await get('Invoices')).body as unknown[]).length).toBe(sim.ids('Invoice').length);
    expect((await get('Contracts?take=0')).status).toBe(400);
    expect((await get('Contracts?take=501')).status).toBe(200);
    expect((await get('Contracts?skip=-1')).status).toBe(400);
  });

  it('returns property names in other letter cases and unknown fields when asked (spec 9.3, 9.4)', async () => {
    const id = sim.ids('Contract')[0]!;
    sim.setPresentation({ propertyCase: 'camel', unknownFields: true });
    try {
      const body = (await get(`Contracts/${id}`)).body as Record<string, unknown>;
      expect(body).toHaveProperty('customerId', sim.current('Contract', id)?.CustomerId);
      expect(body).not.toHaveProperty('CustomerId');
      expect(body).toHaveProperty('simulatorFutureField', UNKNOWN_FIELDS.SimulatorFutureField);
      expect(body).toHaveProperty('extendedAttributes.region');
      sim.setPresentation({ propertyCase: 'upper', unknownFields: false });
      const upper = (await get(`Contracts/${id}`)).body as Record<string, unknown>;
      expect(upper).toHaveProperty('CUSTOMERID');
      expect(upper).not.toHaveProperty('SIMULATORFUTUREFIELD');
    } finally {
      sim.setPresentation({ propertyCase: 'pascal', unknownFields: false });
    }
  });

  it('counts requests by route and status', async () => {
    sim.resetRequestStats();
    await get(`Contracts/${sim.ids('Contract')[0]}`);
    await get('Contracts/000000000000000000000000');
    await get('Contracts');
    expect(sim.stats().requests.byRoute).toEqual({ 'GET /api/v1/Contracts/:id': { '200': 1, '404': 1 }, 'GET /api/v1/Contracts': { '200': 1 } });
  });

  it('serves the true history of an object through the admin endpoint', async () => {
    const id = sim.ids('Contract')[0]!;
    const res = await fetch(`${sim.baseUrl}/_simulator/history/Contract/${id}`);
    const history = (await res.json()) as { states: Array<{ version: number; body: unknown }> };
    expect(history).toEqual(JSON.parse(JSON.stringify(sim.history('Contract', id))));
    expect(history.states.length).toBeGreaterThan(1);
    expect(history.states.map((s) => s.version)).toEqual(history.states.map((_s, i) => i + 1));
  });
});
