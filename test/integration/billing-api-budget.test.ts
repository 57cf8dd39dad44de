import { afterEach, describe, expect, it } from 'vitest';
import { createBillingApiClient } from '../../src/billing-api/client.js';
import { startSimulator } from '../../src/simulator/simulator.js';
import { json, startRecordingServer } from './billing-api-recording-server.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('billing API request budget', () => {
  it('never has more than maxConcurrency requests at the server, token request included', async () => {
    const server = await startRecordingServer((req, res) => {
      // Slow answers, so that requests would pile up at the server if the client let them.
      setTimeout(() => (req.url.startsWith('/oauth/') ? json(res, 200, { access_token: 'tok' }) : json(res, 200, { Id: 'c' })), 20);
    });
    const api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 's' }, requestsPerSecond: 10_000, maxConcurrency: 3 });
    cleanup.push(() => server.close(), () => api.close());
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => api.getResource('Contract', `c${i}`)));
    expect(results.every((r) => r.kind === 'found')).toBe(true);
    expect(server.requests).toHaveLength(31);
    expect(server.peakInFlight()).toBeLessThanOrEqual(3);
    expect(server.peakInFlight()).toBeGreaterThan(1);
  });

  it('causes no 429 when its rate is below the service limit, however many calls wait', async () => {
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 20, burst: 5 } });
    const api = createBillingApiClient({ ...sim.clientOptions(), requestsPerSecond: 12, burst: 2, maxConcurrency: 16 });
    cleanup.push(() => sim.stop(), () => api.close());
    const { contractId } = sim.billing.signup();
    const results = await Promise.all(Array.from({ length: 30 }, () => api.getResource('Contract', contractId)));
    expect(results.every((r) => r.kind === 'found')).toBe(true);
    const stats = sim.stats();
    expect(stats.requests.total).toBe(31);
    expect(Object.values(stats.requests.byRoute).some((outcomes) => '429' in outcomes)).toBe(false);
  });
});
