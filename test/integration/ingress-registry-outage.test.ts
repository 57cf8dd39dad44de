import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

/**
 * The ingress encodes with the schema id it registered at start, so a schema registry outage
 * does not stop it taking webhooks, and must not take it out of a load balancer either: the
 * registry is reported in the readiness reasons, but does not make the ingress not ready.
 * The ingress reaches the real registry through a proxy the test then stops.
 */
let proxy: TcpProxy;
let t: TestIngress;
beforeAll(async () => {
  const registry = new URL(inject('services').SCHEMA_REGISTRY_URL);
  proxy = await startTcpProxy(registry.hostname, Number(registry.port || (registry.protocol === 'https:' ? 443 : 80)));
  const proxied = new URL(registry);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  t = await startTestIngress({}, { SCHEMA_REGISTRY_URL: proxied.toString() }, { quiet: true });
});
afterAll(async () => {
  await t?.stop();
  await proxy?.close();
});

describe('ingress readiness during a schema registry outage', () => {
  it('stays ready and keeps accepting webhooks once its schema id is known; the reasons name the registry', async () => {
    expect((await t.post({ Event: 'ContractChanged', ContractId: 'before-outage' })).status).toBe(200);
    expect((await t.health.readiness()).ready).toBe(true);

    await proxy.close();
    const readiness = await t.health.readiness();
    expect(readiness.checks['ingress.schema-registry']).toMatchObject({ ok: false, reason: expect.any(String) });
    expect(readiness.ready).toBe(true);
    expect((await fetch(`${t.ingress.url}/readyz`)).status).toBe(200);

    expect((await t.post({ Event: 'ContractChanged', ContractId: 'during-outage' })).status).toBe(200);
    expect(await t.recordCount()).toBe(2);
  });
});
