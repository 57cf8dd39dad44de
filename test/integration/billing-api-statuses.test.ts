import { afterEach, describe, expect, it } from 'vitest';
import { ApiAuthError, ApiRejectedError } from '../../src/billing-api/api-errors.js';
import { createBillingApiClient, type BillingApiClient } from '../../src/billing-api/client.js';
import { isRetriable } from '../../src/errors.js';
import { startSimulator } from '../../src/simulator/simulator.js';
import { json, startRecordingServer, tokenThen, type Handler, type RecordingServer } from './billing-api-recording-server.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function serve(resource: Handler): Promise<{ server: RecordingServer; api: BillingApiClient }> {
  const server = await startRecordingServer(tokenThen('tok', resource));
  const api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' }, requestsPerSecond: 10_000, minBackoffMs: 5, maxBackoffMs: 20 });
  cleanup.push(() => server.close(), () => api.close());
  return { server, api };
}

const resourceRequests = (server: RecordingServer): number => server.requests.filter((r) => r.url.startsWith('/api/')).length;
const tokenRequests = (server: RecordingServer): number => server.requests.filter((r) => r.url.startsWith('/oauth/')).length;

describe('billing API statuses', () => {
  it('returns the body exactly as received', async () => {
    const text = '{"Id":"c1","Amount":1.50,"Big":12345678901234567890,"Name":"Grüße ✓","id":"dup"}';
    const { api } = await serve((_req, res) => json(res, 200, text));
    expect(await api.getResource('Contract', 'c1')).toEqual({ kind: 'found', body: text, status: 200 });
  });

  it.each([404, 410] as const)('reports %i as gone', async (status) => {
    const { api, server } = await serve((_req, res) => json(res, status, { Message: 'not found' }));
    expect(await api.getResource('Contract', 'c1')).toEqual({ kind: 'gone', status });
    expect(resourceRequests(server)).toBe(1);
  });

  it('reports an unknown and a deleted simulator object as gone', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 } });
    const api = createBillingApiClient({ ...sim.clientOptions() });
    cleanup.push(() => sim.stop(), () => api.close());
    const { customerId } = sim.billing.signup();
    expect((await api.getResource('Customer', customerId)).kind).toBe('found');
    sim.billing.deleteCustomer(customerId);
    expect(await api.getResource('Customer', customerId)).toEqual({ kind: 'gone', status: 404 });
    expect(await api.getResource('Contract', 'no-such-contract')).toEqual({ kind: 'gone', status: 404 });
  });

  it.each([400, 422])('rejects the identifier on %i (ApiRejectedError, not retriable), without retrying', async (status) => {
    const { api, server } = await serve((_req, res) => json(res, status, { Message: 'bad id' }));
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiRejectedError);
    expect(isRetriable(err)).toBe(false);
    expect((err as ApiRejectedError).context).toMatchObject({ resourceType: 'Contract', resourceId: 'c1', status });
    expect(resourceRequests(server)).toBe(1);
  });

  it('rejects an empty identifier without a request', async () => {
    const { api, server } = await serve((_req, res) => json(res, 200, {}));
    await expect(api.getResource('Contract', '')).rejects.toBeInstanceOf(ApiRejectedError);
    expect(server.requests).toHaveLength(0);
  });

  it('fails with ApiAuthError on 403, without retrying or renewing', async () => {
    const { api, server } = await serve((_req, res) => json(res, 403, { Message: 'forbidden' }));
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiAuthError);
    expect(isRetriable(err)).toBe(false);
    expect(resourceRequests(server)).toBe(1);
    expect(tokenRequests(server)).toBe(1);
  });

  it('renews the token once on 401, then fails with ApiAuthError when the 401 survives the renewal', async () => {
    const { api, server } = await serve((_req, res) => json(res, 401, { Message: 'denied' }));
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiAuthError);
    expect(isRetriable(err)).toBe(false);
    expect(tokenRequests(server)).toBe(2);
    expect(resourceRequests(server)).toBe(2);
  });

  it('retries after a 401 with the renewed token and succeeds', async () => {
    let tokens = 0;
    const server = await startRecordingServer((req, res) => {
      if (req.url.startsWith('/oauth/')) return json(res, 200, { access_token: `tok-${++tokens}`, token_type: 'bearer' });
      if (req.headers.authorization !== 'Bearer tok-2') return json(res, 401, { Message: 'denied' });
      json(res, 200, { Id: 'c1' });
    });
    const api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' } });
    cleanup.push(() => server.close(), () => api.close());
    expect((await api.getResource('Contract', 'c1')).kind).toBe('found');
    expect(tokens).toBe(2);
  });

  it.each([
    [400, 'invalid_client'],
    [401, 'invalid_client'],
    [404, undefined],
  ])('treats a %i from the token endpoint as a configuration problem (ApiAuthError)', async (status, code) => {
    const server = await startRecordingServer((_req, res) => json(res, status, code ? { error: code, error_description: 'bad' } : 'Not Found'));
    const api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' } });
    cleanup.push(() => server.close(), () => api.close());
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiAuthError);
    expect(server.requests).toHaveLength(1);
  });
});
