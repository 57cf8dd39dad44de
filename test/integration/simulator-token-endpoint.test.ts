import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { waitFor } from '../helpers/wait-for.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ seed: 1, clientId: 'app-1', clientSecret: 's3cret:with colon', users: [{ username: 'ana@example.com', password: 'pw' }] });
});
afterAll(() => sim.stop());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function token(form: Record<string, string>, headers: Record<string, string> = {}, url = `${sim.authUrl}/oauth/token/`) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form).toString() });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const api = (path: string, accessToken?: string) => fetch(`${sim.baseUrl}/api/v1/${path}`, accessToken ? { headers: { authorization: `Bearer ${accessToken}` } } : {});

describe('token endpoint, client credentials grant (spec 4.1)', () => {
  it('issues a bearer token for Basic credentials; it never expires by default', async () => {
    const r = await token({ grant_type: 'client_credentials' }, { authorization: basic('app-1', 's3cret:with colon') });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ access_token: expect.any(String), token_type: 'bearer' });
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect((await api('Contracts', String(r.body.access_token))).status).toBe(200);
  });

  it('rejects client_id in the body (invalid_request)', async () => {
    const r = await token({ grant_type: 'client_credentials', client_id: 'app-1' }, { authorization: basic('app-1', 's3cret:with colon') });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
  });

  it('answers 401 invalid_client with WWW-Authenticate without or with wrong Basic credentials', async () => {
    const attempts: Array<Record<string, string>> = [{}, { authorization: basic('app-1', 'wrong') }, { authorization: basic('other', 's3cret:with colon') }];
    for (const headers of attempts) {
      const r = await token({ grant_type: 'client_credentials' }, headers);
      expect(r.status).toBe(401);
      expect(r.body.error).toBe('invalid_client');
      expect(r.headers.get('www-authenticate')).toMatch(/^Basic /);
    }
  });

  it('requires grant_type and knows only its two grants', async () => {
    expect((await token({}, { authorization: basic('app-1', 's3cret:with colon') })).body.error).toBe('invalid_request');
    const r = await token({ grant_type: 'authorization_code', code: 'x' }, { authorization: basic('app-1', 's3cret:with colon') });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('unsupported_grant_type');
  });

  it('wants a form, not JSON', async () => {
    const res = await fetch(`${sim.authUrl}/oauth/token/`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: basic('app-1', 's3cret:with colon') }, body: '{"grant_type":"client_credentials"}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
  });
});

describe('token endpoint, password grant (spec 4.1)', () => {
  it('issues a token for username, password and client_id in the body', async () => {
    const r = await token({ grant_type: 'password', username: 'ana@example.com', password: 'pw', client_id: 'app-1' });
    expect(r.status).toBe(200);
    expect((await api('Customers', String(r.body.access_token))).status).toBe(200);
  });

  it('answers invalid_grant for a wrong password, invalid_client for an unknown app, invalid_request for a missing field', async () => {
    const wrong = await token({ grant_type: 'password', username: 'ana@example.com', password: 'nope', client_id: 'app-1' });
    expect([wrong.status, wrong.body.error]).toEqual([400, 'invalid_grant']);
    const app = await token({ grant_type: 'password', username: 'ana@example.com', password: 'pw', client_id: 'unknown' });
    expect([app.status, app.body.error]).toEqual([401, 'invalid_client']);
    const missing = await token({ grant_type: 'password', password: 'pw', client_id: 'app-1' });
    expect([missing.status, missing.body.error]).toEqual([400, 'invalid_request']);
  });
});

describe('token life', () => {
  it('counts token requests, so a test can prove a client reuses one token', async () => {
    const before = sim.stats().tokenRequests;
    const r = await token({ grant_type: 'client_credentials' }, { authorization: basic('app-1', 's3cret:with colon') });
    for (let i = 0; i < 5; i++) expect((await api('Contracts', String(r.body.access_token))).status).toBe(200);
    await token({ grant_type: 'client_credentials' }, { authorization: basic('app-1', 'bad') });
    expect(sim.stats().tokenRequests - before).toBe(2);
    expect(sim.stats().requests.byRoute['POST /oauth/token']).toMatchObject({ '200': expect.any(Number), '401': expect.any(Number) });
  });

  it('revokes every token on demand, programmatically and through the admin endpoint', async () => {
    const first = String((await token({ grant_type: 'client_credentials' }, { authorization: basic('app-1', 's3cret:with colon') })).body.access_token);
    expect((await api('Contracts', first)).status).toBe(200);
    expect(sim.revokeTokens()).toBeGreaterThan(0);
    const denied = await api('Contracts', first);
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toMatch(/invalid_token/);
    const second = String((await token({ grant_type: 'client_credentials' }, { authorization: basic('app-1', 's3cret:with colon') })).body.access_token);
    expect((await api('Contracts', second)).status).toBe(200);
    const admin = await fetch(`${sim.baseUrl}/_simulator/revoke-tokens`, { method: 'POST' });
    expect(((await admin.json()) as { revoked: number }).revoked).toBeGreaterThan(0);
    expect((await api('Contracts', second)).status).toBe(401);
  });

  it('expires tokens after tokenLifetimeSeconds when set, and says so in expires_in', async () => {
    sim.setTokenLifetime(1);
    try {
      const r = await token({ grant_type: 'client_credentials' }, { authorization: basic('app-1', 's3cret:with colon') });
      expect(r.body.expires_in).toBe(1);
      const t = String(r.body.access_token);
      expect((await api('Contracts', t)).status).toBe(200);
      await waitFor(async () => (await api('Contracts', t)).status === 401, { timeoutMs: 5000, what: 'token expiry' });
    } finally {
      sim.setTokenLifetime(undefined);
    }
  });

  it('serves the token endpoint with and without the trailing slash', async () => {
    const r = await token({ grant_type: 'client_credentials' }, { authorization: basic('app-1', 's3cret:with colon') }, `${sim.authUrl}/oauth/token`);
    expect(r.status).toBe(200);
  });
});
