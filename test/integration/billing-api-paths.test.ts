import { afterEach, describe, expect, it } from 'vitest';
import { createBillingApiClient, type BillingApiClientOptions } from '../../src/billing-api/client.js';
import { startSimulator } from '../../src/simulator/simulator.js';
import { json, startRecordingServer, tokenThen, type RecordingServer } from './billing-api-recording-server.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function recorded(options: Partial<BillingApiClientOptions> = {}, basePath = ''): Promise<{ server: RecordingServer; fetch: (type: 'Contract' | 'Customer', id: string) => Promise<string> }> {
  const server = await startRecordingServer(tokenThen('tok', (_req, res) => json(res, 200, {})));
  const api = createBillingApiClient({ apiUrl: `${server.url}${basePath}`, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 's' }, ...options });
  cleanup.push(() => server.close(), () => api.close());
  return {
    server,
    fetch: async (type, id) => {
      await api.getResource(type, id);
      return server.requests.at(-1)!.url;
    },
  };
}

describe('billing API paths (docs/CONTRACT.md property 8)', () => {
  it.each([
    ['../Customers/x', '/api/v1/Contracts/..%2FCustomers%2Fx'],
    ['..', '/api/v1/Contracts/%2E%2E'],
    ['.', '/api/v1/Contracts/%2E'],
    ['a/b?c#d', '/api/v1/Contracts/a%2Fb%3Fc%23d'],
    ['Grüße ✓', '/api/v1/Contracts/Gr%C3%BC%C3%9Fe%20%E2%9C%93'],
    ['%2e%2e', '/api/v1/Contracts/%252e%252e'],
    ['x\r\nHost: evil', '/api/v1/Contracts/x%0D%0AHost%3A%20evil'],
  ])('requests the id %j as exactly %s', async (id, path) => {
    const { fetch } = await recorded();
    expect(await fetch('Contract', id)).toBe(path);
  });

  it('keeps the base path of {base_url} and takes per-type path overrides', async () => {
    const { fetch } = await recorded({ paths: { Contract: 'v2/contracts' } }, '/billing/');
    expect(await fetch('Contract', '..')).toBe('/billing/api/v1/v2/contracts/%2E%2E');
    expect(await fetch('Customer', 'c/1')).toBe('/billing/api/v1/Customers/c%2F1');
  });

  it('a contract id naming a customer fetches the contract of that literal id, never the customer', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 } });
    const api = createBillingApiClient({ ...sim.clientOptions() });
    cleanup.push(() => sim.stop(), () => api.close());
    const { customerId } = sim.billing.signup();
    expect(await api.getResource('Contract', `../Customers/${customerId}`)).toEqual({ kind: 'gone', status: 404 });
    expect(await api.getResource('Contract', '..')).toEqual({ kind: 'gone', status: 404 });
    const routes = sim.stats().requests.byRoute;
    expect(routes['GET /api/v1/Contracts/:id']).toEqual({ '404': 2 });
    expect(routes['GET /api/v1/Customers/:id']).toBeUndefined();
    expect(routes['GET /api/v1/Contracts']).toBeUndefined();
  });
});
