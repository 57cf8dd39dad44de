import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

/**
 * INGRESS_TOKEN rotation: during the overlap the old and the new token are both listed, so the
 * deliveries the billing service still retries to the old URL are accepted while new ones use
 * the new URL; any other token is refused as before.
 */
const OLD = 'old-token-0123456789abcdef';
const NEW = 'new-token-fedcba9876543210';
let t: TestIngress;
beforeAll(async () => {
  t = await startTestIngress({}, { INGRESS_TOKEN: `${OLD}, ${NEW}` });
});
afterAll(async () => {
  await t?.stop();
});

describe('an ingress with two tokens', () => {
  it('accepts a webhook at either token, and writes both to Kafka', async () => {
    const old = await t.post({ Event: 'ContractChanged', ContractId: 'rot-old' }, { path: `/webhooks/${OLD}` });
    const fresh = await t.post({ Event: 'ContractChanged', ContractId: 'rot-new' }, { path: `/webhooks/${NEW}` });
    expect([old.status, fresh.status]).toEqual([200, 200]);
    const records = await t.readAll();
    expect(records.map((r) => r.key).sort()).toEqual(['Contract:rot-new', 'Contract:rot-old']);
  });

  it.each([
    ['a third token', '/webhooks/other-token-0123456789'],
    ['the two tokens joined', `/webhooks/${OLD},${NEW}`],
    ['no token', '/webhooks'],
    ['a prefix of a token', `/webhooks/${NEW.slice(0, -1)}`],
  ])('answers 404 to %s and writes nothing', async (_name, path) => {
    const before = await t.recordCount();
    const res = await t.post({ Event: 'ContractChanged', ContractId: 'rot-refused' }, { path });
    expect(res).toEqual({ status: 404, body: { error: 'not found' } });
    expect(await t.recordCount()).toBe(before);
  });
});
