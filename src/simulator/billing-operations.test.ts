import { describe, expect, it } from 'vitest';
import { BillingOperations } from './billing-operations.js';
import { CatalogOperations } from './catalog-operations.js';
import { PLANS } from './catalog.js';
import type { WebhookPayload } from './event-names.js';
import { DAY_MS, dateOnly, iso, type OperationContext } from './operation-context.js';
import { PaymentOperations } from './payment-operations.js';
import { createRandom } from './seeded-random.js';
import { SimulatedClock } from './simulated-clock.js';
import { TruthStore } from './truth-store.js';

function setup() {
  const clock = new SimulatedClock(new Date('2025-03-01T10:00:00Z'));
  const store = new TruthStore(() => clock.now());
  const events: WebhookPayload[] = [];
  const ctx: OperationContext = { store, random: createRandom(3), now: () => clock.now(), emit: (p) => void events.push(p), legacyEvents: false, escalationSettingsId: 'e'.repeat(24), componentSubscriptions: new Map() };
  new CatalogOperations(ctx).create();
  const days = (n: number) => clock.advanceTo(new Date(clock.now().getTime() + n * DAY_MS));
  return { store, events, days, billing: new BillingOperations(ctx), payments: new PaymentOperations(ctx), catalog: new CatalogOperations(ctx) };
}

type Phase = { Type: string; StartDate: string; PlanId: string | null };

describe('timestamps', () => {
  it('are .NET style with seven fraction digits; date-only fields are the UTC date', () => {
    expect(iso(new Date('2025-03-01T10:00:00.123Z'))).toBe('2025-03-01T10:00:00.1230000Z');
    expect(dateOnly(new Date('2025-03-01T23:59:59.999Z'))).toBe('2025-03-01');
  });
});

describe('contract phases', () => {
  it('a trial is a Trial phase and the planned Normal one; the trial end makes the Normal phase current', () => {
    const { store, billing, days } = setup();
    const s = billing.signup({ plan: 0, trial: true });
    const c = store.get('Contract', s.contractId)!;
    expect((c.Phases as Phase[]).map((p) => p.Type)).toEqual(['Trial', 'Normal']);
    expect((c.Phases as Phase[])[1]!.StartDate).toBe('2025-03-15T10:00:00.0000000Z');
    expect(c).toMatchObject({ LifecycleStatus: 'InTrial', CurrentPhase: { Type: 'Trial' }, NextBillingDate: '2025-03-15T10:00:00.0000000Z' });
    days(14);
    billing.endTrial(s.contractId);
    expect(store.get('Contract', s.contractId)).toMatchObject({ LifecycleStatus: 'Active', CurrentPhase: { Type: 'Normal', StartDate: '2025-03-15T10:00:00.0000000Z' } });
  });

  it('a cancellation in the trial sets the future EndDate and an Inactive phase that replaces the planned Normal one', () => {
    const { store, billing, days, events } = setup();
    const s = billing.signup({ plan: 0, trial: true });
    days(5);
    billing.cancel(s.contractId, 9);
    const c = store.get('Contract', s.contractId)!;
    expect(c.EndDate).toBe('2025-03-15T10:00:00.0000000Z');
    expect((c.Phases as Phase[]).map((p) => [p.Type, p.StartDate])).toEqual([['Trial', '2025-03-01T10:00:00.0000000Z'], ['Inactive', '2025-03-15T10:00:00.0000000Z']]);
    expect(c).toMatchObject({ LifecycleStatus: 'InTrial', CurrentPhase: { Type: 'Trial' } });
    expect(events.at(-1)).toMatchObject({ Event: 'ContractCancelled', ContractId: s.contractId, ContractChangeType: 'Cancellation' });
    days(9);
    billing.endContract(s.contractId);
    expect(store.get('Contract', s.contractId)).toMatchObject({ LifecycleStatus: 'Ended', EndDate: '2025-03-15T10:00:00.0000000Z', CurrentPhase: { Type: 'Inactive' }, NextBillingDate: null });
  });

  it('a plan change is a new Normal phase from now; a cancellation planned before stays', () => {
    const { store, billing, days } = setup();
    const s = billing.signup({ plan: 0, trial: false });
    billing.cancel(s.contractId, 30);
    days(10);
    billing.changePlan(s.contractId, 2);
    const c = store.get('Contract', s.contractId)!;
    expect((c.Phases as Phase[]).map((p) => [p.Type, p.PlanId])).toEqual([['Normal', PLANS[0]!.PlanId], ['Normal', PLANS[2]!.PlanId], ['Inactive', null]]);
    expect(c).toMatchObject({ PlanId: PLANS[2]!.PlanId, PlanVariantId: PLANS[2]!.PlanVariantId, CurrentPhase: { Type: 'Normal', PlanId: PLANS[2]!.PlanId } });
  });
});

describe('deleting a customer', () => {
  it('deletes its contracts, and sends CustomerDeleted then ContractDeleted per contract', () => {
    const { store, billing, events } = setup();
    const s = billing.signup();
    const other = billing.signup();
    events.length = 0;
    billing.deleteCustomer(s.customerId);
    expect(store.get('Customer', s.customerId)).toBeUndefined();
    expect(store.get('Contract', s.contractId)).toBeUndefined();
    expect(store.history('Contract', s.contractId)?.deleted).toBe(true);
    expect(store.get('Contract', other.contractId)).toBeDefined();
    expect(store.get('Order', s.orderId)).toBeDefined();
    expect(events).toEqual([
      { Event: 'CustomerDeleted', CustomerId: s.customerId },
      { Event: 'ContractDeleted', ContractId: s.contractId, CustomerId: s.customerId },
    ]);
  });
});

describe('prices from the catalog', () => {
  it('bills the plan variant fee current at billing time, and announces a price change', () => {
    const { store, billing, payments, catalog, days, events } = setup();
    const s = billing.signup({ plan: 1, trial: false });
    days(30);
    payments.endBillingPeriod(s.contractId);
    const first = store.get('Invoice', payments.bill(s.contractId))!;
    catalog.setRecurringFee(1, 35);
    expect(events.at(-1)).toEqual({ Event: 'PlanVariantChanged', PlanVariantId: PLANS[1]!.PlanVariantId });
    days(30);
    payments.endBillingPeriod(s.contractId);
    const second = store.get('Invoice', payments.bill(s.contractId))!;
    expect([first.TotalNet, second.TotalNet]).toEqual([PLANS[1]!.Price, 35]);
    expect(second).toMatchObject({ DueDate: '2025-04-30', DocumentDate: '2025-04-30', Created: '2025-04-30T10:00:00.0000000Z' });
    expect(store.get('Contract', s.contractId)).toMatchObject({ BilledUntil: '2025-04-30T10:00:00.0000000Z', LastBillingDate: '2025-04-30T10:00:00.0000000Z', NextBillingDate: '2025-05-30T10:00:00.0000000Z' });
  });
});
