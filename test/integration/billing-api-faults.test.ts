import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { ApiUnavailableError } from '../../src/billing-api/api-errors.js';
import { createBillingApiClient, type BillingApiClient, type BillingApiClientOptions } from '../../src/billing-api/client.js';
import { isRetriable } from '../../src/errors.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/simulator.js';
import { waitFor } from '../helpers/wait-for.js';
import { json, startRecordingServer, tokenThen, type Handler, type RecordingServer } from './billing-api-recording-server.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const fast = { requestsPerSecond: 10_000, maxConcurrency: 16, minBackoffMs: 5, maxBackoffMs: 20 };

async function simulated(options: SimulatorOptions, clientOptions: Partial<BillingApiClientOptions> = {}): Promise<{ sim: Simulator; api: BillingApiClient; contractId: string }> {
  const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, ...options });
  const api = createBillingApiClient({ ...sim.clientOptions(), ...fast, ...clientOptions });
  cleanup.push(() => sim.stop(), () => api.close());
  return { sim, api, contractId: sim.billing.signup().contractId };
}

async function served(resource: Handler, clientOptions: Partial<BillingApiClientOptions> = {}): Promise<{ server: RecordingServer; api: BillingApiClient }> {
  const server = await startRecordingServer(tokenThen('tok', resource));
  const api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' }, ...fast, ...clientOptions });
  cleanup.push(() => server.close(), () => api.close());
  return { server, api };
}

async function counter(registry: Registry, name: string): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return (m?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

describe('billing API faults', () => {
  it('retries 5xx and then succeeds', async () => {
    let n = 0;
    const { api, server } = await served((_req, res) => (++n <= 2 ? json(res, 503, { Message: 'busy' }) : json(res, 200, { Id: 'c1' })));
    expect((await api.getResource('Contract', 'c1')).kind).toBe('found');
    expect(server.requests.filter((r) => r.url.startsWith('/api/'))).toHaveLength(3);
  });

  it('gets through a simulator failing half of its answers', async () => {
    const registry = new Registry();
    const { api, contractId } = await simulated({ seed: 7, faults: { errorRate: 0.5 } }, { maxAttempts: 12, registry });
    const results = await Promise.all(Array.from({ length: 20 }, () => api.getResource('Contract', contractId)));
    expect(results.every((r) => r.kind === 'found')).toBe(true);
    expect(await counter(registry, 'billing_loader_api_retries_total')).toBeGreaterThan(0);
  });

  it('gives up after the configured attempts on persistent 5xx with a retriable ApiUnavailableError', async () => {
    const { api, sim, contractId } = await simulated({ faults: { errorRate: 1 } }, { maxAttempts: 4 });
    const err = await api.getResource('Contract', contractId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiUnavailableError);
    expect(isRetriable(err)).toBe(true);
    expect((err as Error).message).toMatch(/after 4 attempts/);
    expect(sim.stats().requests.total).toBe(4);
  });

  it('treats requests that never get an answer as retriable', async () => {
    const { api } = await simulated({ faults: { timeoutRate: 1 } }, { maxAttempts: 2, requestTimeoutMs: 200 });
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiUnavailableError);
    expect((err as Error).message).toMatch(/no answer within 200 ms/);
  });

  it('treats reset connections as retriable', async () => {
    const { api } = await simulated({ faults: { resetRate: 1 } }, { maxAttempts: 3 });
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiUnavailableError);
    expect(isRetriable(err)).toBe(true);
  });

  it('treats a refused connection as retriable', async () => {
    const server = await startRecordingServer(() => {});
    const url = server.url;
    await server.close();
    const api = createBillingApiClient({ apiUrl: url, authUrl: url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 's' }, ...fast, maxAttempts: 2 });
    cleanup.push(() => api.close());
    await expect(api.getResource('Contract', 'c1')).rejects.toBeInstanceOf(ApiUnavailableError);
  });

  it('backs off on a storm of 429s without Retry-After: a simulator limit far below the load still answers every request', async () => {
    // With 5 ms backoffs and 6 attempts the calls would run out long before the limit allows them;
    // only the budget's growing pause after each 429 (full jitter, doubling) gets them all through.
    const registry = new Registry();
    const { api, sim, contractId } = await simulated({ rateLimit: { requestsPerSecond: 4, burst: 2 } }, { registry, maxAttempts: 30 });
    const results = await Promise.all(Array.from({ length: 12 }, () => api.getResource('Contract', contractId)));
    expect(results.every((r) => r.kind === 'found')).toBe(true);
    expect(sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.['429']).toBeGreaterThan(0);
    expect(sim.stats().requests.byRoute['GET /api/v1/Contracts/:id']?.['200']).toBe(12);
    expect(await counter(registry, 'billing_loader_api_rate_limited_total')).toBeGreaterThan(0);
  });

  it('honours a Retry-After given as an HTTP date', async () => {
    let n = 0;
    const { api } = await served((_req, res) => (++n === 1 ? json(res, 429, { Message: 'slow down' }, { 'retry-after': new Date(Date.now() + 1000).toUTCString() }) : json(res, 200, { Id: 'c1' })));
    expect((await api.getResource('Contract', 'c1')).kind).toBe('found');
    expect(n).toBe(2);
  });

  it('fails at once, with the wait, when Retry-After is longer than it waits in-process', async () => {
    const { api, server } = await served((_req, res) => json(res, 429, { Message: 'slow down' }, { 'retry-after': '3600' }));
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiUnavailableError);
    expect((err as ApiUnavailableError).retryAfterMs).toBe(3_600_000);
    expect(server.requests.filter((r) => r.url.startsWith('/api/'))).toHaveLength(1);
  });

  it('retries the token endpoint on 5xx', async () => {
    let n = 0;
    const server = await startRecordingServer((req, res) => {
      if (req.url.startsWith('/oauth/')) return ++n === 1 ? json(res, 502, 'bad gateway') : json(res, 200, { access_token: 'tok' });
      json(res, 200, { Id: 'c1' });
    });
    const api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 's' }, ...fast });
    cleanup.push(() => server.close(), () => api.close());
    expect((await api.getResource('Contract', 'c1')).kind).toBe('found');
    expect(n).toBe(2);
  });

  it('abandons a call when its signal aborts', async () => {
    const { api, server } = await served(() => {});
    const abort = new AbortController();
    const call = api.getResource('Contract', 'c1', { signal: abort.signal });
    await waitFor(() => server.requests.some((r) => r.url.startsWith('/api/')));
    abort.abort(new Error('shutting down'));
    await expect(call).rejects.toThrow('shutting down');
  });
});

describe('billing API client: X-RateLimit-Remaining', () => {
  it('slows its budget down when the sandbox reports little of its limit left, and back up when there is more', async () => {
    const registry = new Registry();
    // A bucket of 40 that all but never refills: the answers count X-RateLimit-Remaining down from 39.
    const { api, sim, contractId } = await simulated({ rateLimit: { requestsPerSecond: 0.001, burst: 40 } }, { registry, requestsPerSecond: 100 });
    const rate = async () => String((await registry.getSingleMetric('billing_loader_api_budget_requests_per_second')?.get())?.values[0]?.value);
    expect(await rate()).toBe('100');
    // The token took one; 35 reads leave 4 of 40, a tenth is 4: full rate still.
    for (let i = 0; i < 35; i++) await api.getResource('Contract', contractId);
    expect(await rate()).toBe('100');
    // 3 left, then 2: in proportion to what is left of the tenth.
    await api.getResource('Contract', contractId);
    expect(Number(await rate())).toBeCloseTo(75);
    await api.getResource('Contract', contractId);
    expect(Number(await rate())).toBeCloseTo(50);
    // A roomier limit: the answers show plenty left, and the full rate is back.
    sim.setRateLimit({ requestsPerSecond: 1000, burst: 1000 });
    await api.getResource('Contract', contractId);
    expect(await rate()).toBe('100');
  });
});
