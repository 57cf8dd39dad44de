import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

/**
 * The ingress port faces the billing service (and so the internet): its /readyz says ready or
 * not, nothing more. Reasons (which carry broker addresses and error text) and the metrics are
 * served on OPS_PORT when it is set.
 */
const INTERNAL_REASON = 'connect ECONNREFUSED 10.20.30.40:9092';

let plain: TestIngress;
let withOps: TestIngress;

beforeAll(async () => {
  [plain, withOps] = await Promise.all([startTestIngress(), startTestIngress({ opsPort: 0 })]);
});
afterAll(async () => {
  await Promise.all([plain?.stop(), withOps?.stop()]);
});

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

describe('ingress: public readiness and OPS_PORT', () => {
  it('answers a bare /readyz on the ingress port, ready or not, without reasons', async () => {
    expect(await get(`${plain.ingress.url}/readyz`)).toEqual({ status: 200, text: JSON.stringify({ status: 'ready' }) });
    plain.health.setCondition('test.broker', INTERNAL_REASON);
    try {
      expect(await get(`${plain.ingress.url}/readyz`)).toEqual({ status: 503, text: JSON.stringify({ status: 'not ready' }) });
    } finally {
      plain.health.setCondition('test.broker', undefined);
    }
    // Without OPS_PORT the ingress port still serves the metrics (as before).
    expect((await get(`${plain.ingress.url}/metrics`)).text).toContain('billing_loader_ingress_requests_total');
    expect(plain.ingress.opsUrl).toBeUndefined();
  });

  it('with OPS_PORT: reasons and metrics only there; the ingress port keeps the webhooks, /healthz and a bare /readyz', async () => {
    const ops = withOps.ingress.opsUrl as string;
    expect(ops).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    withOps.health.setCondition('test.broker', INTERNAL_REASON);
    try {
      const publicReady = await get(`${withOps.ingress.url}/readyz`);
      expect(publicReady).toEqual({ status: 503, text: JSON.stringify({ status: 'not ready' }) });
      const opsReady = await get(`${ops}/readyz`);
      expect(opsReady.status).toBe(503);
      expect(JSON.parse(opsReady.text)).toMatchObject({ ready: false, checks: { 'test.broker': { ok: false, reason: INTERNAL_REASON } } });
    } finally {
      withOps.health.setCondition('test.broker', undefined);
    }
    expect((await get(`${withOps.ingress.url}/healthz`)).status).toBe(200);
    expect((await get(`${ops}/healthz`)).status).toBe(200);
    expect((await get(`${withOps.ingress.url}/metrics`)).status).toBe(404);
    expect((await get(`${ops}/metrics`)).text).toContain('billing_loader_ingress_requests_total');
    expect((await withOps.post({ Event: 'ContractChanged', ContractId: 'c-1' })).status).toBe(200);
    const onOps = await fetch(`${ops}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"Event":"ContractChanged","ContractId":"c-2"}' });
    expect(onOps.status).toBe(404);
  });
});
