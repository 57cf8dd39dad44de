import { describe, expect, it } from 'vitest';
import { BillingOperations } from './billing-operations.js';
import { CatalogOperations } from './catalog-operations.js';
import { EVENT_NAMES, EXTRA_EVENT_NAMES, type WebhookPayload } from './event-names.js';
import { PaymentOperations } from './payment-operations.js';
import type { ResourceType } from './resource-types.js';
import { runScenario, type ScenarioOptions } from './scenario-runner.js';
import { createRandom } from './seeded-random.js';
import { SimulatedClock } from './simulated-clock.js';
import { TruthStore } from './truth-store.js';

/** The resources a receiver fetches for an event (docs/CONTRACT.md table), contract → its customer and, on a reset, its escalation processes included. */
function referenced(p: WebhookPayload, store: TruthStore): Array<[ResourceType, string]> {
  const out: Array<[ResourceType, string]> = [];
  const add = (type: ResourceType, id: unknown) => typeof id === 'string' && out.push([type, id]);
  add('Contract', p.ContractId);
  add('Customer', p.CustomerId);
  add('Order', p.OrderId);
  add('Invoice', p.InvoiceId);
  add('Invoice', p.OldInvoiceId);
  add('Invoice', p.NewInvoiceId);
  add('InvoiceDraft', p.OldInvoiceDraftId);
  add('InvoiceDraft', p.NewInvoiceDraftId);
  add('Dunning', p.DunningId);
  add('PaymentTransaction', p.PaymentTransactionId);
  // The escalation settings are served only when configured (then they exist from the start).
  if (store.history('PaymentEscalationProcess', String(p.PaymentEscalationProcessId))) add('PaymentEscalationProcess', p.PaymentEscalationProcessId);
  add('Plan', p.PlanId);
  add('PlanVariant', p.PlanVariantId);
  add('Component', p.ComponentId);
  if (typeof p.ContractId === 'string') add('Customer', store.history('Contract', p.ContractId)?.states.at(-1)?.body?.CustomerId);
  return out;
}

interface Observed {
  payload: WebhookPayload;
  /** Per referenced object: its number of states and whether it is deleted, when the event was emitted. */
  seen: Array<{ type: ResourceType; id: string; states: number; deleted: boolean }>;
}

function play(seed: number, options: ScenarioOptions = {}) {
  const clock = new SimulatedClock(new Date('2025-01-01T00:00:00Z'));
  const store = new TruthStore(() => clock.now());
  const observed: Observed[] = [];
  const ctx = {
    store,
    random: createRandom(seed),
    now: () => clock.now(),
    legacyEvents: true,
    escalationSettingsId: 'e5ca1a7e5e771265e5ca1a7e',
    componentSubscriptions: new Map(),
    emit: (payload: WebhookPayload) => {
      const seen = referenced(payload, store).map(([type, id]) => {
        const h = store.history(type, id);
        return { type, id, states: h?.states.length ?? 0, deleted: h?.deleted ?? false };
      });
      observed.push({ payload, seen });
    },
  };
  const billing = new BillingOperations(ctx);
  const payments = new PaymentOperations(ctx);
  const catalog = new CatalogOperations(ctx);
  catalog.create();
  const result = runScenario({ clock, billing, payments, catalog, random: ctx.random, eventCount: () => observed.length }, options);
  return { result, observed, store };
}

describe('default scenario', () => {
  it('sends every event of spec 6.2 and every event the public documentation adds', async () => {
    const { observed, result } = play(42);
    expect((await result).completed).toBe(true);
    const names = new Set(observed.map((o) => o.payload.Event));
    expect([...EVENT_NAMES, ...EXTRA_EVENT_NAMES].filter((n) => !names.has(n))).toEqual([]);
    expect(names.size).toBe(EVENT_NAMES.length + EXTRA_EVENT_NAMES.length);
  });

  it('emits an event only when every object it refers to exists (deleted for the *Deleted events)', async () => {
    const { observed, result } = play(5);
    await result;
    for (const o of observed) {
      for (const s of o.seen) {
        expect(s.states, `${o.payload.Event} refers to ${s.type} ${s.id}`).toBeGreaterThan(0);
        expect(s.deleted, `${o.payload.Event} and the deletion state of ${s.type} ${s.id}`).toBe(o.payload.Event.endsWith('Deleted'));
      }
    }
  });

  it('changes no object silently after the last event that makes a receiver fetch it', async () => {
    const { observed, result, store } = play(9);
    await result;
    const lastSeen = new Map<string, number>();
    for (const o of observed) for (const s of o.seen) lastSeen.set(`${s.type}:${s.id}`, s.states);
    expect(lastSeen.size).toBeGreaterThan(50);
    for (const [key, states] of lastSeen) {
      const [type, id] = key.split(':') as [ResourceType, string];
      expect(store.history(type, id)?.states.length, key).toBe(states);
    }
  });

  it('escalates with TriggerDays 5, 10, 5 counted from the oldest unpaid due date, then resets', async () => {
    const { observed, result } = play(3);
    await result;
    const escalated = observed.filter((o) => o.payload.Event === 'PaymentEscalated');
    const byContract = new Map<string, number[]>();
    for (const e of escalated) byContract.set(String(e.payload.ContractId), [...(byContract.get(String(e.payload.ContractId)) ?? []), Number(e.payload.TriggerDays)]);
    expect([...byContract.values()]).toContainEqual([5, 10, 5]);
    const contract = [...byContract].find(([, days]) => days.join() === '5,10,5')![0];
    const events = observed.filter((o) => o.payload.ContractId === contract).map((o) => o.payload.Event);
    expect(events.indexOf('PaymentEscalationReset')).toBeGreaterThan(events.lastIndexOf('PaymentEscalated'));
    expect(escalated.every((e) => Number.isInteger(e.payload.TriggerDays) && typeof e.payload.YourCustomerId === 'string')).toBe(true);
  });

  it('deletes customers for real: no current body, a deleted last state', async () => {
    const { observed, result, store } = play(11);
    await result;
    const deleted = observed.filter((o) => o.payload.Event === 'CustomerDeleted').map((o) => String(o.payload.CustomerId));
    expect(deleted.length).toBeGreaterThan(0);
    for (const id of deleted) {
      expect(store.get('Customer', id)).toBeUndefined();
      expect(store.history('Customer', id)?.deleted).toBe(true);
    }
  });

  it('is reproducible: one seed, one history; another seed, another', async () => {
    const run = async (seed: number) => {
      const p = play(seed);
      await p.result;
      const objects = (['Contract', 'Customer', 'Invoice', 'PaymentTransaction', 'PlanVariant'] as const).flatMap((t) => p.store.ids(t).map((id) => p.store.history(t, id)!.states.map((s) => [s.body, s.simulatedAt])));
      return JSON.stringify([p.observed.map((o) => o.payload), objects]);
    };
    const a = await run(1234);
    expect(await run(1234)).toBe(a);
    expect(await run(4321)).not.toBe(a);
  });

  it('the signups scenario only signs customers up', async () => {
    const { observed, result } = play(1, { name: 'signups', customers: 3 });
    await result;
    expect(new Set(observed.map((o) => o.payload.Event))).toEqual(new Set(['CustomerCreated', 'ContractCreated', 'AccountCreated', 'OrderSucceeded']));
    expect(observed.filter((o) => o.payload.Event === 'CustomerCreated')).toHaveLength(3);
  });

  it('stops when aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const { result } = play(1, { signal: controller.signal });
    expect((await result).completed).toBe(false);
  });
});
