import { afterAll, describe, expect, it } from 'vitest';
import { EXTRA_EVENT_NAMES } from '../../src/simulator/event-names.js';
import { startRecordingReceiver, type RecordingReceiver } from '../../src/simulator/recording-receiver.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * What the service's webhooks carry beyond the spec's fields, and the events it sends beyond the
 * spec's 25 (docs/SIMULATOR.md, "Webhooks"), as received over HTTP.
 */
const running: Array<Simulator | RecordingReceiver> = [];
afterAll(async () => {
  await Promise.all(running.map((r) => r.stop()));
});

describe('webhook fields and events beyond the spec', () => {
  it('EntityId everywhere; change id, type and external customer id on contract events; NewInvoiceDraftIds; every extra event', async () => {
    const receiver = await startRecordingReceiver(() => ({ status: 200 }));
    const sim = await startSimulator({ seed: 5, entityId: 'e0e0e0e0e0e0e0e0e0e0e0e0', webhookUrl: `${receiver.url}/webhooks`, delivery: { retryBaseDelayMs: 5 } });
    running.push(sim, receiver);
    const result = await sim.runScenario({ customers: 12 });
    await waitFor(() => sim.stats().webhooks.delivered === result.events, { what: 'all webhooks delivered', timeoutMs: 30_000 });
    const bodies = receiver.received.map((r) => r.json as Record<string, unknown>);
    expect(bodies).toHaveLength(result.events);

    expect(bodies.filter((b) => b.EntityId !== 'e0e0e0e0e0e0e0e0e0e0e0e0')).toEqual([]);

    const contractEvents = bodies.filter((b) => ['ContractCreated', 'ContractChanged', 'ContractCancelled'].includes(String(b.Event)));
    expect(contractEvents.length).toBeGreaterThan(20);
    const changeIds = new Set<unknown>();
    for (const b of contractEvents) {
      expect(b.ContractChangeId).toMatch(/^[0-9a-f]{24}$/);
      expect(b.ContractChangeType).toEqual(expect.any(String));
      const customer = sim.history('Customer', String(b.CustomerId))?.states[0]?.body;
      expect(b.ExternalCustomerId).toBe(customer?.ExternalCustomerId);
      changeIds.add(b.ContractChangeId);
    }
    expect(changeIds.size).toBe(contractEvents.length);
    expect(new Set(contractEvents.map((b) => b.ContractChangeType))).toEqual(new Set(['Signup', 'TrialEnd', 'Upgrade', 'Downgrade', 'ComponentSubscriptionChange', 'Cancellation', 'End']));

    const corrected = bodies.filter((b) => b.Event === 'InvoiceCorrected');
    expect(corrected.length).toBeGreaterThan(0);
    for (const b of corrected) expect(b.NewInvoiceDraftIds).toEqual([b.NewInvoiceDraftId]);

    const names = new Set(bodies.map((b) => String(b.Event)));
    expect(EXTRA_EVENT_NAMES.filter((n) => !names.has(n))).toEqual([]);
    for (const b of bodies.filter((x) => x.Event === 'ContractDataChanged')) expect(sim.history('Contract', String(b.ContractId))).toBeDefined();
    for (const [event, field, type] of [['PlanChanged', 'PlanId', 'Plan'], ['PlanVariantChanged', 'PlanVariantId', 'PlanVariant'], ['ComponentChanged', 'ComponentId', 'Component']] as const) {
      for (const b of bodies.filter((x) => x.Event === event)) expect(sim.history(type, String(b[field]))?.states.length, `${event} ${String(b[field])}`).toBeGreaterThan(1);
    }
  });
});
