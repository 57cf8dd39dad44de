import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

let t: TestIngress;
beforeAll(async () => {
  // A long linger holds the first webhook's batch back, so it is surely in flight when stop begins.
  t = await startTestIngress({ lingerMs: 1500 });
});
afterAll(async () => {
  await t?.stop();
});

async function inFlightRequests(): Promise<number> {
  const metric = await t.metrics.getSingleMetric('billing_loader_ingress_in_flight_requests')?.get();
  return metric?.values[0]?.value ?? 0;
}

describe('ingress: graceful shutdown', () => {
  it('answers 503 to new webhooks and to /readyz while it finishes the webhook in flight, then closes', async () => {
    expect((await fetch(`${t.ingress.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${t.ingress.url}/healthz`)).status).toBe(200);

    const first = t.post({ Event: 'ContractChanged', ContractId: 'c-shutdown' });
    await waitFor(async () => (await inFlightRequests()) === 1, { what: 'the first webhook is being handled' });
    const stopping = t.ingress.stop();

    const ready = await fetch(`${t.ingress.url}/readyz`);
    expect(ready.status).toBe(503);
    // The public port says only "not ready"; the reason is in the detailed readiness (OPS_PORT, the log).
    expect(await ready.json()).toEqual({ status: 'not ready' });
    expect(JSON.stringify(await t.health.readiness())).toContain('shutting down');
    const late = await t.post({ Event: 'ContractChanged', ContractId: 'c-late' });
    expect(late).toEqual({ status: 503, body: { error: expect.stringMatching(/shutting down/) } });

    const answer = await first;
    expect(answer.status).toBe(200);
    await stopping;

    expect(await t.recordCount()).toBe(1);
    const [stored] = await t.readAll();
    expect(stored?.value.event_id).toBe(answer.body.event_id);
    // Closed: nothing listens any more.
    await expect(fetch(`${t.ingress.url}/healthz`)).rejects.toThrow();
  });
});
