import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log.js';
import { TransientApiError } from './api-errors.js';
import { createBillingApiMetrics } from './api-metrics.js';
import type { SendHttp } from './http-exchange.js';
import { createTokenProvider, parseTokenResponse } from './token-provider.js';

describe('parseTokenResponse', () => {
  const now = 1_000_000;

  it('reads an RFC 6749 response without expiry as a token that never expires (spec 5.4)', () => {
    expect(parseTokenResponse('{"access_token":"abc","token_type":"bearer"}', now)).toEqual({ value: 'abc', renewAt: undefined });
    expect(parseTokenResponse('{"access_token":"abc"}', now)).toEqual({ value: 'abc', renewAt: undefined });
  });

  it('reads the property names in any letter case (spec 9.3), the first of two variants winning', () => {
    expect(parseTokenResponse('{"Access_Token":"abc","TOKEN_TYPE":"Bearer","Expires_In":100}', now)).toEqual({ value: 'abc', renewAt: now + 90_000 });
    expect(parseTokenResponse('{"ACCESS_TOKEN":"first","access_token":"second"}', now).value).toBe('first');
    expect(parseTokenResponse('{"__proto__":{"access_token":"x"},"access_token":"abc"}', now).value).toBe('abc');
  });

  it('renews a tenth of the lifetime early, at most a minute', () => {
    expect(parseTokenResponse('{"access_token":"a","token_type":"Bearer","expires_in":100}', now).renewAt).toBe(now + 90_000);
    expect(parseTokenResponse('{"access_token":"a","expires_in":"3600"}', now).renewAt).toBe(now + 3_540_000);
  });

  it.each([
    ['not JSON', 'oops'],
    ['no token', '{"token_type":"bearer"}'],
    ['an empty token', '{"access_token":""}'],
    ['another token type', '{"access_token":"a","token_type":"mac"}'],
    ['a bad expiry', '{"access_token":"a","expires_in":"soon"}'],
    ['null', 'null'],
  ])('treats %s as a transient upstream fault', (_what, body) => {
    expect(() => parseTokenResponse(body, now)).toThrow(TransientApiError);
  });
});

describe('createTokenProvider', () => {
  function harness(bodies: string[]) {
    let clock = 0;
    const sent: string[] = [];
    const pending: Array<() => void> = [];
    const send: SendHttp = async (req) => {
      sent.push(req.body ?? '');
      await new Promise<void>((resolve) => pending.push(resolve));
      return { status: 200, headers: {}, body: bodies[sent.length - 1] ?? bodies.at(-1)! };
    };
    const registry = new Registry();
    const provider = createTokenProvider({ authUrl: 'http://auth.test/base/', clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 's' }, send, metrics: createBillingApiMetrics(registry), logger: silentLogger, now: () => clock });
    const flush = async (): Promise<void> => {
      await new Promise((r) => setImmediate(r));
      for (const release of pending.splice(0)) release();
    };
    return { provider, sent, flush, advance: (ms: number) => void (clock += ms), registry };
  }

  it('asks once for many concurrent callers and reuses the token', async () => {
    const h = harness(['{"access_token":"t1"}']);
    const waiting = Promise.all([h.provider.get(), h.provider.get(), h.provider.get()]);
    await h.flush();
    expect(await waiting).toEqual(['t1', 't1', 't1']);
    expect(await h.provider.get()).toBe('t1');
    expect(h.sent).toEqual(['grant_type=client_credentials']);
  });

  it('renews once for every caller refused with the same token', async () => {
    const h = harness(['{"access_token":"t1"}', '{"access_token":"t2"}']);
    const first = h.provider.get();
    await h.flush();
    await first;
    const renewals = Promise.all([h.provider.renew('t1'), h.provider.renew('t1')]);
    await h.flush();
    expect(await renewals).toEqual(['t2', 't2']);
    // A late 401 for the old token gets the replacement without another request.
    expect(await h.provider.renew('t1')).toBe('t2');
    expect(h.sent).toHaveLength(2);
  });

  it('renews on expiry', async () => {
    const h = harness(['{"access_token":"t1","expires_in":100}', '{"access_token":"t2","expires_in":100}']);
    const first = h.provider.get();
    await h.flush();
    expect(await first).toBe('t1');
    h.advance(89_000);
    expect(await h.provider.get()).toBe('t1');
    h.advance(1_000);
    const second = h.provider.get();
    await h.flush();
    expect(await second).toBe('t2');
    const renewals = await h.registry.getSingleMetric('billing_loader_api_token_renewals_total')?.get();
    expect(renewals?.values).toEqual([expect.objectContaining({ labels: { reason: 'expiry' }, value: 1 })]);
  });
});
