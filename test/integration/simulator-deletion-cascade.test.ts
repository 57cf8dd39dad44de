import { afterEach, describe, expect, it } from 'vitest';
import { startRecordingReceiver, type RecordingReceiver } from '../../src/simulator/recording-receiver.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Deleting a customer on the service deletes its contracts too: both become unreadable and a
 * ContractDeleted is sent per contract, after the CustomerDeleted (docs/SIMULATOR.md, "Deletion").
 */
const running: Array<Simulator | RecordingReceiver> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

async function tokenFor(sim: Simulator): Promise<string> {
  const res = await fetch(`${sim.authUrl}/oauth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('deleting a customer', () => {
  it('makes the customer and its contracts answer 404, sends ContractDeleted per contract, and leaves the other customers alone', async () => {
    const receiver = await startRecordingReceiver(() => ({ status: 200 }));
    const sim = await startSimulator({ seed: 12, webhookUrl: `${receiver.url}/webhooks`, rateLimit: { requestsPerSecond: 0 } });
    running.push(sim, receiver);
    const token = await tokenFor(sim);
    const get = (path: string) => fetch(`${sim.baseUrl}/api/v1/${path}`, { headers: { authorization: `Bearer ${token}` } });
    const gone = sim.billing.signup({ trial: false });
    const kept = sim.billing.signup({ trial: false });
    const invoiceId = sim.payments.bill(gone.contractId);
    const before = sim.stats().events;

    sim.billing.deleteCustomer(gone.customerId);
    await waitFor(() => sim.stats().webhooks.delivered === sim.stats().events, { what: 'all webhooks delivered' });

    const after = receiver.received.slice(before).map((r) => r.json);
    expect(after).toEqual([
      { Event: 'CustomerDeleted', CustomerId: gone.customerId, EntityId: sim.entityId },
      { Event: 'ContractDeleted', ContractId: gone.contractId, CustomerId: gone.customerId, EntityId: sim.entityId },
    ]);
    expect((await get(`Customers/${gone.customerId}`)).status).toBe(404);
    const contract = await get(`Contracts/${gone.contractId}`);
    expect(contract.status).toBe(404);
    expect(await contract.json()).toEqual({ Message: expect.any(String) });
    const listed = (await (await get('Contracts')).json()) as Array<{ Id: string }>;
    expect(listed.map((c) => c.Id)).toEqual([kept.contractId]);
    expect(sim.history('Contract', gone.contractId)?.deleted).toBe(true);
    // The customer's documents stay; the other customer and its contract are untouched.
    expect((await get(`Invoices/${invoiceId}`)).status).toBe(200);
    expect((await get(`Orders/${gone.orderId}`)).status).toBe(200);
    expect((await get(`Customers/${kept.customerId}`)).status).toBe(200);
    expect((await get(`Contracts/${kept.contractId}`)).status).toBe(200);
  });

  it('in the default scenario: every CustomerDeleted is followed by a ContractDeleted for each of its contracts, all unreadable', async () => {
    const sim = await startSimulator({ seed: 77, rateLimit: { requestsPerSecond: 0 } });
    running.push(sim);
    await sim.runScenario({ customers: 12 });
    const events = sim.events().map((e) => e.payload);
    const deletedCustomers = events.filter((e) => e.Event === 'CustomerDeleted').map((e) => String(e.CustomerId));
    expect(deletedCustomers.length).toBeGreaterThan(0);
    for (const customerId of deletedCustomers) {
      const contracts = sim.ids('Contract').filter((id) => sim.history('Contract', id)?.states[0]?.body?.CustomerId === customerId);
      expect(contracts.length).toBeGreaterThan(0);
      const at = events.findIndex((e) => e.Event === 'CustomerDeleted' && e.CustomerId === customerId);
      for (const contractId of contracts) {
        const deletedAt = events.findIndex((e) => e.Event === 'ContractDeleted' && e.ContractId === contractId);
        expect(deletedAt).toBeGreaterThan(at);
        expect(events[deletedAt]).toMatchObject({ CustomerId: customerId });
        expect(sim.current('Contract', contractId)).toBeUndefined();
      }
    }
    // No contract is deleted without its customer.
    const contractDeleted = events.filter((e) => e.Event === 'ContractDeleted');
    expect(contractDeleted.every((e) => deletedCustomers.includes(String(e.CustomerId)))).toBe(true);
  });
});
