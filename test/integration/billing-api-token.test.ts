import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { ApiAuthError } from '../../src/billing-api/api-errors.js';
import { createBillingApiClient, type BillingApiClient, type BillingApiClientOptions } from '../../src/billing-api/client.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { waitFor } from '../helpers/wait-for.js';
import { json, startRecordingServer, type RecordingServer } from './billing-api-recording-server.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function simulator(options: Parameters<typeof startSimulator>[0] = {}): Promise<Simulator> {
  const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, ...options });
  cleanup.push(() => sim.stop());
  return sim;
}

function client(sim: Pick<Simulator, 'baseUrl' | 'authUrl' | 'clientId'>, options: Partial<BillingApiClientOptions> & Pick<BillingApiClientOptions, 'grant'>): BillingApiClient {
  const c = createBillingApiClient({ apiUrl: sim.baseUrl, authUrl: sim.authUrl, clientId: sim.clientId, requestsPerSecond: 10_000, maxConcurrency: 32, minBackoffMs: 5, maxBackoffMs: 20, ...options });
  cleanup.push(() => c.close());
  return c;
}

async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((sum, v) => sum + v.value, 0);
}

describe('billing API token', () => {
  it('reuses one token across hundreds of requests, sequential and concurrent', async () => {
    const sim = await simulator();
    const { contractId, customerId } = sim.billing.signup();
    const api = client(sim, { grant: { kind: 'client_credentials', clientSecret: sim.clientSecret } });
    const concurrent = await Promise.all(Array.from({ length: 100 }, (_, i) => api.getResource(i % 2 ? 'Contract' : 'Customer', i % 2 ? contractId : customerId)));
    for (let i = 0; i < 200; i++) await api.getResource('Contract', contractId);
    expect(concurrent.every((r) => r.kind === 'found')).toBe(true);
    expect(sim.stats().tokenRequests).toBe(1);
    expect(sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.['200']).toBe(250);
  });

  it('renews once after revocation, however many requests hit the 401 at once', async () => {
    const sim = await simulator();
    const { contractId } = sim.billing.signup();
    const registry = new Registry();
    const api = client(sim, { grant: { kind: 'client_credentials', clientSecret: sim.clientSecret }, registry });
    await api.getResource('Contract', contractId);
    sim.revokeTokens();
    const results = await Promise.all(Array.from({ length: 50 }, () => api.getResource('Contract', contractId)));
    expect(results.every((r) => r.kind === 'found')).toBe(true);
    expect(sim.stats().tokenRequests).toBe(2);
    // Many requests carried the revoked token at once, and still one renewal.
    expect(sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.['401']).toBeGreaterThan(1);
    expect(await metric(registry, 'billing_loader_api_token_renewals_total', { reason: '401' })).toBe(1);
  });

  it('renews a token that states an expiry before it runs out', async () => {
    const sim = await simulator({ tokenLifetimeSeconds: 1 });
    const { contractId } = sim.billing.signup();
    const registry = new Registry();
    const api = client(sim, { grant: { kind: 'client_credentials', clientSecret: sim.clientSecret }, registry });
    await waitFor(async () => (await api.getResource('Contract', contractId)).kind === 'found' && (await metric(registry, 'billing_loader_api_token_renewals_total', { reason: 'expiry' })) >= 1, { what: 'a renewal on expiry', intervalMs: 100 });
  });

  it('uses the password grant', async () => {
    const sim = await simulator();
    const { contractId } = sim.billing.signup();
    const user = sim.users[0]!;
    const api = client(sim, { grant: { kind: 'password', username: user.username, password: user.password } });
    expect((await api.getResource('Contract', contractId)).kind).toBe('found');
    expect(sim.stats().tokenRequests).toBe(1);
  });

  it.each([
    ['a wrong client secret', { kind: 'client_credentials', clientSecret: 'wrong' }],
    ['a wrong password', { kind: 'password', username: 'demo@example.com', password: 'wrong' }],
  ] as const)('fails with ApiAuthError (not retriable) on %s, without retrying', async (_what, grant) => {
    const sim = await simulator();
    const api = client(sim, { grant });
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiAuthError);
    expect((err as ApiAuthError).retriable).toBe(false);
    expect((err as Error).message).toMatch(/invalid_(client|grant)/);
    expect(sim.stats().tokenRequests).toBe(1);
  });

  describe('on the wire (spec 4.1)', () => {
    let server: RecordingServer;
    const serve = async (): Promise<RecordingServer> => {
      server = await startRecordingServer((req, res) => {
        if (req.url.startsWith('/auth/oauth/token')) return json(res, 200, { access_token: 'tok', token_type: 'bearer' });
        json(res, 200, { Id: 'c1' });
      });
      cleanup.push(() => server.close());
      return server;
    };

    it('client credentials: Basic base64(client_id:client_secret), only grant_type in the body', async () => {
      await serve();
      const api = client({ baseUrl: server.url, authUrl: `${server.url}/auth/`, clientId: 'my-client' }, { grant: { kind: 'client_credentials', clientSecret: 'p:ss wörd' } });
      await api.getResource('Contract', 'c1');
      const token = server.requests[0]!;
      expect(token.method).toBe('POST');
      expect(token.url).toBe('/auth/oauth/token/');
      expect(token.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(token.headers.authorization).toBe(`Basic ${Buffer.from('my-client:p:ss wörd').toString('base64')}`);
      expect(token.body).toBe('grant_type=client_credentials');
      expect(server.requests[1]!.headers.authorization).toBe('Bearer tok');
    });

    it('password grant: grant_type, username, password and client_id in the body, no Authorization header', async () => {
      await serve();
      const api = client({ baseUrl: server.url, authUrl: `${server.url}/auth`, clientId: 'app-1' }, { grant: { kind: 'password', username: 'a+b@example.com', password: 'p&ss=1' } });
      await api.getResource('Contract', 'c1');
      const token = server.requests[0]!;
      expect(token.url).toBe('/auth/oauth/token/');
      expect(token.headers.authorization).toBeUndefined();
      expect(Object.fromEntries(new URLSearchParams(token.body))).toEqual({ grant_type: 'password', username: 'a+b@example.com', password: 'p&ss=1', client_id: 'app-1' });
    });
  });
});
