import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness();
});
afterAll(async () => {
  await h?.stop();
});

const expectGapFree = (versions: { version: number; content_hash: string }[]) => {
  expect(versions.map((v) => v.version)).toEqual(versions.map((_, i) => i + 1));
  for (let i = 1; i < versions.length; i++) expect(versions[i]?.content_hash).not.toBe(versions[i - 1]?.content_hash);
};

describe('enricher: exact versions from the real API', () => {
  it('a signup gives version 1 of the customer, the contract and the order, with the webhook as source', async () => {
    const s = h.sim.billing.signup({ trial: true });
    await waitFor(() => h.versionsOf('Order', s.orderId).length === 1 && h.versionsOf('Contract', s.contractId).length === 1 && h.versionsOf('Customer', s.customerId).length === 1, { what: 'signup versions' });
    const [contract] = h.versionsOf('Contract', s.contractId);
    expect(contract).toMatchObject({ version: 1, deleted: false });
    expect(JSON.parse(contract?.body as string)).toEqual(h.sim.current('Contract', s.contractId));
    expect(contract?.source_event_ids.length).toBeGreaterThan(0);
    expect(contract?.sources[0]?.topic).toBe(`${h.config.topicPrefix}.webhooks`);
  });

  it('a contract brings its customer, even when no webhook names the customer', async () => {
    h.sim.setWebhookUrl(undefined);
    const s = h.sim.billing.signup();
    h.sim.setWebhookUrl(`${h.ingress.url}/webhooks`);
    h.sim.emit({ Event: 'ContractChanged', ContractId: s.contractId });
    await waitFor(() => h.versionsOf('Customer', s.customerId).length === 1, { what: 'customer via its contract' });
    const [customer] = h.versionsOf('Customer', s.customerId);
    expect(JSON.parse(customer?.body as string)).toEqual(h.sim.current('Customer', s.customerId));
    expect(customer?.source_events).toEqual(['ContractChanged']);
  });

  it('a change gives the next version; duplicated webhooks give none', async () => {
    const s = h.sim.billing.signup({ trial: false });
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'v1' });
    h.sim.billing.changePlan(s.contractId, 1);
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 2, { what: 'v2' });
    const before = h.snapshots.length;
    const fetchesBefore = JSON.stringify(h.sim.stats().requests.byRoute);
    for (let i = 0; i < 5; i++) h.sim.emit({ Event: 'ContractChanged', ContractId: s.contractId });
    // The duplicates are fetched (freshness) but produce nothing new.
    await waitFor(() => JSON.stringify(h.sim.stats().requests.byRoute) !== fetchesBefore, { what: 'duplicate fetched' });
    h.sim.billing.changePlan(s.contractId, 2);
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 3, { what: 'v3' });
    expectGapFree(h.versionsOf('Contract', s.contractId));
    expect(h.snapshots.slice(before).filter((v) => v.resource_id === s.contractId)).toHaveLength(1);
  });

  it('a deleted customer gets exactly one deleted version', async () => {
    const s = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Customer', s.customerId).length >= 1, { what: 'customer v1' });
    h.sim.billing.deleteCustomer(s.customerId);
    await waitFor(() => h.versionsOf('Customer', s.customerId).some((v) => v.deleted), { what: 'deleted version' });
    h.sim.emit({ Event: 'CustomerDeleted', CustomerId: s.customerId });
    // Something after, to know the duplicate was processed (the customer's contract is deleted with it).
    const later = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Customer', later.customerId).length >= 1, { what: 'later work' });
    const versions = h.versionsOf('Customer', s.customerId);
    expect(versions.filter((v) => v.deleted)).toHaveLength(1);
    expect(versions.at(-1)).toMatchObject({ deleted: true, body: null, content_hash: 'deleted' });
    expectGapFree(versions);
  });

  it('a forged webhook for an id that does not exist creates no version, and ends in a not-found dead letter', async () => {
    h.sim.emit({ Event: 'ContractChanged', ContractId: 'forged-000000000000000000' });
    const s = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'later signup' });
    await waitFor(() => h.deadLetters.length === 1, { what: 'give-up after the not-found window' });
    expect(h.deadLetters[0]).toMatchObject({ errorClass: 'not-found', stage: 'enricher' });
    expect(String(h.deadLetters[0]?.value)).toContain('forged-000000000000000000');
    expect(h.versionsOf('Contract', 'forged-000000000000000000')).toEqual([]);
  });
});
