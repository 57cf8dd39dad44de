import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';

let sim: Simulator;
beforeAll(async () => {
  // 0.1 requests per second: after the burst of 3, the bucket does not refill within the test.
  sim = await startSimulator({ seed: 2, rateLimit: { requestsPerSecond: 0.1, burst: 3 } });
});
afterAll(() => sim.stop());

describe('request limits (spec 8)', () => {
  it('answers 429 without Retry-After once the budget is spent, with X-RateLimit-Limit/-Remaining, token requests included', async () => {
    const form = { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` }, body: 'grant_type=client_credentials' };
    const tokenRes = await fetch(`${sim.authUrl}/oauth/token/`, form);
    expect(tokenRes.status).toBe(200);
    const { access_token: accessToken } = (await tokenRes.json()) as { access_token: string };
    const answers: [number, string | null, string | null, string | null][] = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${sim.baseUrl}/api/v1/Contracts`, { headers: { authorization: `Bearer ${accessToken}` } });
      answers.push([res.status, res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining'), res.headers.get('retry-after')]);
      if (res.status === 429) expect(await res.json()).toEqual({ Message: expect.any(String) });
      else await res.arrayBuffer();
    }
    // The token request took the first of the 3.
    expect(answers).toEqual([
      [200, '3', '1', null],
      [200, '3', '0', null],
      [429, '3', '0', null],
      [429, '3', '0', null],
    ]);
    expect((await fetch(`${sim.authUrl}/oauth/token/`, form)).status).toBe(429);
    expect(sim.stats().requests.byRoute['GET /api/v1/Contracts']).toEqual({ '200': 2, '429': 2 });
  });

  it('can be lifted at run time', async () => {
    sim.setRateLimit({ requestsPerSecond: 0 });
    const res = await fetch(`${sim.baseUrl}/api/v1/Contracts`);
    expect(res.status).toBe(401);
  });
});
