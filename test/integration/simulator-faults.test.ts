import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';

let sim: Simulator;
let url: string;
let auth: { authorization: string };
beforeAll(async () => {
  sim = await startSimulator({ seed: 3, rateLimit: { requestsPerSecond: 0 } });
  const { contractId } = sim.billing.signup();
  url = `${sim.baseUrl}/api/v1/Contracts/${contractId}`;
  const res = await fetch(`${sim.authUrl}/oauth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  auth = { authorization: `Bearer ${((await res.json()) as { access_token: string }).access_token}` };
});
afterAll(() => sim.stop());

describe('fault injection', () => {
  it('answers 5xx at errorRate 1, and 200 again when the faults are lifted', async () => {
    sim.setFaults({ errorRate: 1 });
    const res = await fetch(url, { headers: auth });
    expect([500, 502, 503]).toContain(res.status);
    sim.setFaults({ errorRate: 0 });
    expect((await fetch(url, { headers: auth })).status).toBe(200);
  });

  it('resets the connection at resetRate 1', async () => {
    sim.setFaults({ resetRate: 1 });
    try {
      await expect(fetch(url, { headers: auth })).rejects.toThrow();
      expect(sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.reset).toBeGreaterThan(0);
    } finally {
      sim.setFaults({ resetRate: 0 });
    }
  });

  it('never answers at timeoutRate 1, so the client must time out', async () => {
    sim.setFaults({ timeoutRate: 1 });
    try {
      await expect(fetch(url, { headers: auth, signal: AbortSignal.timeout(300) })).rejects.toThrow(/abort|timeout/i);
      expect(sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.hang).toBeGreaterThan(0);
    } finally {
      sim.setFaults({ timeoutRate: 0 });
    }
  });

  it('still answers correctly with latency, and takes fault settings through the admin endpoint', async () => {
    const res = await fetch(`${sim.baseUrl}/_simulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ latencyMs: 20, latencyJitterMs: 10 }) });
    expect(await res.json()).toMatchObject({ latencyMs: 20, latencyJitterMs: 10, errorRate: 0 });
    expect((await fetch(url, { headers: auth })).status).toBe(200);
    const bad = await fetch(`${sim.baseUrl}/_simulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ errorRate: 'lots' }) });
    expect(bad.status).toBe(400);
    sim.setFaults({ latencyMs: 0, latencyJitterMs: 0 });
  });
});
