import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../log.js';
import { createRandom } from './seeded-random.js';
import { DEFAULT_DELIVERY, WebhookDispatcher, type DeliveryOptions, type WebhookTransport } from './webhook-dispatcher.js';

/** A transport that answers from a script and remembers the (fake) time of each call. */
function scripted(answer: (url: string, call: number) => { status: number; location?: string } | Error) {
  const calls: Array<{ url: string; at: number; body: string }> = [];
  const transport: WebhookTransport = async (url, body) => {
    calls.push({ url, at: Date.now(), body });
    const a = answer(url, calls.length);
    if (a instanceof Error) throw a;
    return a;
  };
  return { calls, transport };
}

function dispatcher(transport: WebhookTransport, options: Partial<DeliveryOptions> = {}) {
  const o = { ...DEFAULT_DELIVERY, retryBaseDelayMs: 60_000, ...options };
  return new WebhookDispatcher(() => o, createRandom(1), silentLogger, transport);
}

describe('WebhookDispatcher (spec 6.1)', () => {
  beforeEach(() => void vi.useFakeTimers({ now: 0 }));
  afterEach(() => void vi.useRealTimers());

  it('repeats a failing delivery 12 times in all with the delay doubling from the base, then drops it', async () => {
    const { calls, transport } = scripted(() => ({ status: 500 }));
    const d = dispatcher(transport);
    d.dispatch(1, { Event: 'ContractChanged', ContractId: 'c1' }, 'http://receiver/hook');
    await vi.runAllTimersAsync();
    expect(calls).toHaveLength(12);
    const gaps = calls.slice(1).map((c, i) => c.at - calls[i]!.at);
    expect(gaps).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024].map((k) => k * 60_000));
    const [record] = d.deliveries();
    expect(record?.outcome).toBe('dropped');
    expect(record?.retryDelaysMs).toEqual(gaps);
    expect(d.stats()).toMatchObject({ deliveries: 1, dropped: 1, delivered: 0, attempts: 12 });
  });

  it.each([200, 201, 202, 204])('takes %i as success and stops', async (status) => {
    const { calls, transport } = scripted(() => ({ status }));
    const d = dispatcher(transport);
    d.dispatch(1, { Event: 'CustomerCreated', CustomerId: 'x' }, 'http://receiver/hook');
    await vi.runAllTimersAsync();
    expect(calls).toHaveLength(1);
    expect(d.stats().delivered).toBe(1);
  });

  it.each([203, 302, 400, 404, 503])('repeats after %i', async (status) => {
    const { calls, transport } = scripted((_url, n) => ({ status: n === 1 ? status : 200 }));
    const d = dispatcher(transport);
    d.dispatch(1, { Event: 'CustomerCreated', CustomerId: 'x' }, 'http://receiver/hook');
    await vi.runAllTimersAsync();
    expect(calls).toHaveLength(2);
    expect(d.deliveries()[0]?.outcome).toBe('delivered');
  });

  it('repeats after a network error', async () => {
    const { calls, transport } = scripted((_url, n) => (n < 3 ? new Error('ECONNREFUSED') : { status: 204 }));
    const d = dispatcher(transport);
    d.dispatch(1, { Event: 'CustomerCreated', CustomerId: 'x' }, 'http://receiver/hook');
    await vi.runAllTimersAsync();
    expect(calls).toHaveLength(3);
    expect(d.deliveries()[0]?.attempts.map((a) => a.error ?? a.status)).toEqual(['ECONNREFUSED', 'ECONNREFUSED', 204]);
  });

  it('follows 301 (relative Location too) within one attempt until a success code', async () => {
    const { calls, transport } = scripted((url) =>
      url.endsWith('/old') ? { status: 301, location: '/mid' } : url.endsWith('/mid') ? { status: 301, location: 'http://other/new' } : { status: 202 },
    );
    const d = dispatcher(transport);
    d.dispatch(1, { Event: 'OrderSucceeded', ContractId: 'c', OrderId: 'o' }, 'http://receiver/old');
    await vi.runAllTimersAsync();
    expect(calls.map((c) => c.url)).toEqual(['http://receiver/old', 'http://receiver/mid', 'http://other/new']);
    expect(calls.every((c) => c.body === '{"Event":"OrderSucceeded","ContractId":"c","OrderId":"o"}')).toBe(true);
    const [record] = d.deliveries();
    expect(record?.attempts).toHaveLength(1);
    expect(record?.outcome).toBe('delivered');
  });

  it('counts a redirect loop as a failed attempt', async () => {
    const { transport } = scripted(() => ({ status: 301, location: '/again' }));
    const d = dispatcher(transport, { maxAttempts: 2, maxRedirects: 3 });
    d.dispatch(1, { Event: 'CustomerCreated', CustomerId: 'x' }, 'http://receiver/hook');
    await vi.runAllTimersAsync();
    const [record] = d.deliveries();
    expect(record?.outcome).toBe('dropped');
    expect(record?.attempts.map((a) => a.redirects.length)).toEqual([3, 3]);
  });

  it('sends an event twice when duplicateRate is 1', async () => {
    const { calls, transport } = scripted(() => ({ status: 200 }));
    const d = dispatcher(transport, { duplicateRate: 1 });
    d.dispatch(7, { Event: 'CustomerCreated', CustomerId: 'x' }, 'http://receiver/hook');
    await vi.runAllTimersAsync();
    expect(calls).toHaveLength(2);
    expect(d.deliveries().map((r) => [r.eventSeq, r.duplicate])).toEqual([
      [7, false],
      [7, true],
    ]);
  });

  it('holds late events back by lateDelayMs', async () => {
    const { calls, transport } = scripted(() => ({ status: 200 }));
    const d = dispatcher(transport, { lateRate: 1, lateDelayMs: 5000 });
    d.dispatch(1, { Event: 'CustomerCreated', CustomerId: 'x' }, 'http://receiver/hook');
    await vi.advanceTimersByTimeAsync(4999);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(1);
  });

  it('abandons pending deliveries on stop', async () => {
    const { calls, transport } = scripted(() => ({ status: 500 }));
    const d = dispatcher(transport);
    d.dispatch(1, { Event: 'CustomerCreated', CustomerId: 'x' }, 'http://receiver/hook');
    await vi.advanceTimersByTimeAsync(0);
    d.stop();
    await vi.runAllTimersAsync();
    expect(calls).toHaveLength(1);
    expect(d.stats()).toMatchObject({ abandoned: 1, pending: 0 });
  });
});
