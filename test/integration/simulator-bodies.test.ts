import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_PATHS, type ResourceType } from '../../src/simulator/resource-types.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';

/**
 * The bodies the sandbox serves have the fields the service's public documentation shows for
 * each type (docs/SIMULATOR.md, "Resource bodies"), in its formats: what a loader pointed at the
 * real service would read.
 */
let sim: Simulator;
let token: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 31, rateLimit: { requestsPerSecond: 0 } });
  await sim.runScenario({ customers: 18 });
  const res = await fetch(`${sim.authUrl}/oauth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  token = ((await res.json()) as { access_token: string }).access_token;
});
afterAll(() => sim.stop());

async function get(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sim.baseUrl}/api/v1/${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Every live object of a type as the API serves it. */
async function served(type: ResourceType): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for (const id of sim.ids(type)) {
    if (!sim.current(type, id)) continue;
    const r = await get(`${RESOURCE_PATHS[type]}/${id}`);
    expect(r.status, `${type} ${id}`).toBe(200);
    out.push(r.body);
  }
  expect(out.length, type).toBeGreaterThan(0);
  return out;
}

type Body = Record<string, unknown>;
const keys = (o: unknown) => Object.keys(o as object).sort();
const sorted = (list: string[]) => [...list].sort();
const DOTNET = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/;
const DATE_ONLY = /^\d{4}-\d\d-\d\d$/;

/** Every string in the value (nested too) that looks like a timestamp or a date, with its path. */
function dates(value: unknown, path = ''): Array<[string, string]> {
  if (typeof value === 'string') return /^\d{4}-\d\d-\d\d/.test(value) ? [[path, value]] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => dates(v, `${path}[${i}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => dates(v, path ? `${path}.${k}` : k));
  return [];
}

const CONTRACT_FIELDS = [
  'Id', 'CustomerId', 'CustomerName', 'PlanId', 'PlanVariantId', 'PlanGroupId', 'LifecycleStatus', 'Phases', 'CurrentPhase', 'StartDate', 'EndDate',
  'BilledUntil', 'LastBillingDate', 'NextBillingDate', 'Balance', 'Currency', 'ReferenceCode', 'ExternalId', 'PaymentBearer', 'PaymentProvider',
  'EscalationSuspended', 'RecurringPaymentsPaused', 'BillingSuspended',
];
const NOT_ON_THE_SERVICE = ['TrialEndDate', 'CancellationDate', 'NoticePeriodDays', 'CurrentPeriodStart', 'CurrentPeriodEnd', 'PlanName', 'PaymentProcessStatus', 'EscalationStatus', 'PaymentEscalationProcessId', 'ComponentSubscriptions'];

describe('resource bodies as the service documents them', () => {
  it('contracts: the documented fields only, LifecycleStatus values, phases of the documented types', async () => {
    for (const c of await served('Contract')) {
      expect(keys(c)).toEqual(sorted(CONTRACT_FIELDS));
      for (const field of NOT_ON_THE_SERVICE) expect(c).not.toHaveProperty(field);
      expect(['InTrial', 'Active', 'Ended', 'TrialExpired', 'TemporarilyInactive', 'Draft', 'InOrderProcess']).toContain(c.LifecycleStatus);
      const phases = c.Phases as Array<Record<string, unknown>>;
      expect(phases.length).toBeGreaterThan(0);
      for (const p of phases) {
        expect(keys(p)).toEqual(sorted(['Type', 'StartDate', 'PlanId', 'PlanVariantId', 'Quantity', 'InheritStartDate']));
        expect(['Trial', 'Normal', 'Inactive']).toContain(p.Type);
      }
      // Phases in time order; the current one is the last that has started.
      const starts = phases.map((p) => Date.parse(String(p.StartDate)));
      expect(starts).toEqual([...starts].sort((a, b) => a - b));
      expect(keys(c.CurrentPhase)).toEqual(sorted(['Type', 'StartDate', 'PlanId', 'PlanVariantId', 'Quantity']));
      expect(phases.some((p) => p.StartDate === (c.CurrentPhase as Record<string, unknown>).StartDate && p.Type === (c.CurrentPhase as Record<string, unknown>).Type)).toBe(true);
    }
  });

  it('a trial is a Trial phase followed by the Normal one; InTrial while it lasts', () => {
    const trials = sim.ids('Contract').map((id) => sim.history('Contract', id)!.states[0]!.body!).filter((b) => b.LifecycleStatus === 'InTrial');
    expect(trials.length).toBeGreaterThan(0);
    for (const b of trials) {
      const [trial, next] = b.Phases as Array<Record<string, unknown>>;
      expect(trial?.Type).toBe('Trial');
      expect(next?.Type).toBe('Normal');
      expect(Date.parse(String(next?.StartDate))).toBeGreaterThan(Date.parse(String(trial?.StartDate)));
    }
  });

  it('a cancellation is a future EndDate and an Inactive phase starting at it; the end makes the contract Ended', () => {
    const cancelled = sim.events().filter((e) => e.payload.Event === 'ContractCancelled');
    expect(cancelled.length).toBeGreaterThan(0);
    for (const e of cancelled) {
      const history = sim.history('Contract', String(e.payload.ContractId))!;
      const state = history.states.filter((s) => s.simulatedAt <= e.simulatedAt).at(-1)!.body!;
      expect(Date.parse(String(state.EndDate))).toBeGreaterThan(Date.parse(e.simulatedAt));
      const last = (state.Phases as Array<Record<string, unknown>>).at(-1)!;
      expect(last).toMatchObject({ Type: 'Inactive', StartDate: state.EndDate });
      expect(state.LifecycleStatus).not.toBe('Ended');
      // Before the cancellation the contract had no EndDate.
      expect(history.states.find((s) => s.body && s.body.EndDate === null)).toBeDefined();
      const ended = history.states.find((s) => s.body?.LifecycleStatus === 'Ended');
      if (ended) expect((ended.body!.CurrentPhase as Record<string, unknown>).Type).toBe('Inactive');
    }
  });

  it('customers, orders, invoices: the documented fields; Order.Total is the net total; Invoice.Created, date-only DueDate and DocumentDate', async () => {
    for (const c of await served('Customer')) {
      expect(keys(c)).toEqual(sorted([
        'Id', 'CreatedAt', 'DeletedAt', 'IsLocked', 'Hidden', 'CustomerName', 'CustomerSubName', 'ExternalCustomerId', 'CompanyName', 'FirstName', 'LastName',
        'Language', 'Locale', 'VatId', 'EmailAddress', 'Tag', 'Address', 'CustomerType', 'DefaultBearerMedium',
      ]));
      expect(keys(c.Address)).toEqual(sorted(['Street', 'HouseNumber', 'PostalCode', 'City', 'Country']));
    }
    for (const o of await served('Order')) {
      expect(keys(o)).toEqual(sorted(['Id', 'ContractId', 'CustomerId', 'PlanId', 'PlanVariantId', 'Currency', 'Total', 'TotalVat', 'TotalGross', 'IsTrial', 'Status', 'CreatedAt', 'LineItems']));
      // Each total is rounded to cents on its own: gross and net + VAT may differ by a cent.
      expect(Math.abs(Number(o.TotalGross) - Number(o.Total) - Number(o.TotalVat))).toBeLessThanOrEqual(0.011);
      expect(['InProgress', 'Completed', 'PaymentPending', 'Failed']).toContain(o.Status);
      // Total is the net sum of the line items (the plan's and the components').
      expect(Number(o.Total)).toBeCloseTo((o.LineItems as Body[]).reduce((n, i) => n + Number(i.TotalNet), 0), 2);
    }
    for (const i of await served('Invoice')) {
      const documented = ['Id', 'InvoiceNumber', 'CustomerId', 'ContractId', 'Created', 'SentAt', 'DueDate', 'DocumentDate', 'Currency', 'TotalNet', 'TotalVat', 'TotalGross', 'IsInvoice', 'ExternalCustomerId'];
      const assumed = ['Items', 'Status', 'InvoiceDraftId', 'CorrectsInvoiceId', 'CorrectedByInvoiceId'];
      expect(keys(i)).toEqual(sorted([...documented, ...assumed]));
      expect(i.DueDate).toMatch(DATE_ONLY);
      expect(i.DocumentDate).toMatch(DATE_ONLY);
      expect(i.Created).toMatch(DOTNET);
    }
  });

  it('payment transactions: Status is an object, with StatusTimestamp and a StatusHistory that ends in it', async () => {
    const statuses = new Set<string>();
    for (const t of await served('PaymentTransaction')) {
      expect(keys(t)).toEqual(sorted(['Id', 'ContractId', 'CustomerId', 'CustomerName', 'Amount', 'Currency', 'PaymentProvider', 'PaymentProviderRole', 'Trigger', 'Preauth', 'StatusTimestamp', 'Status', 'StatusHistory']));
      const status = t.Status as Record<string, unknown>;
      expect(keys(status)).toEqual(sorted(['Status', 'Timestamp', 'HttpCode', 'Amount', 'Preauth']));
      expect(['Created', 'Pending', 'InProgress', 'Succeeded', 'Failed', 'Canceled', 'Refunded', 'Chargeback']).toContain(status.Status);
      expect(t.StatusTimestamp).toBe(status.Timestamp);
      expect((t.StatusHistory as unknown[]).at(-1)).toEqual(status);
      statuses.add(String(status.Status));
    }
    expect([...statuses].sort()).toEqual(['Failed', 'Succeeded']);
  });

  it('writes every timestamp with seven fraction digits, and only DueDate and DocumentDate of invoices as dates', async () => {
    const types: ResourceType[] = ['Contract', 'Customer', 'Order', 'Invoice', 'InvoiceDraft', 'Dunning', 'PaymentTransaction'];
    for (const type of types) {
      for (const body of await served(type)) {
        for (const [path, value] of dates(body)) {
          if (type === 'Invoice' && (path === 'DueDate' || path === 'DocumentDate')) expect(value, `${type}.${path}`).toMatch(DATE_ONLY);
          else expect(value, `${type}.${path}`).toMatch(DOTNET);
        }
      }
    }
  });

  it('PaymentEscalated names the account escalation settings: 404 by default, the settings when configured', async () => {
    const escalated = sim.events().find((e) => e.payload.Event === 'PaymentEscalated');
    expect(escalated?.payload.PaymentEscalationProcessId).toBe(sim.escalationSettingsId);
    expect((await get(`PaymentEscalationProcesses/${sim.escalationSettingsId}`)).status).toBe(404);
    // One id for every escalation of the account, and the dunnings name it too.
    const ids = new Set(sim.events().filter((e) => e.payload.Event === 'PaymentEscalated').map((e) => e.payload.PaymentEscalationProcessId));
    expect([...ids]).toEqual([sim.escalationSettingsId]);
    for (const id of sim.ids('Dunning')) expect(sim.current('Dunning', id)?.PaymentEscalationProcessId).toBe(sim.escalationSettingsId);

    const configured = await startSimulator({ seed: 31, escalationSettings: true });
    try {
      const settings = configured.current('PaymentEscalationProcess', configured.escalationSettingsId);
      expect(settings).toMatchObject({ Id: configured.escalationSettingsId, Name: expect.any(String) });
      expect(settings?.Steps).toContainEqual({ TriggerDays: 10, Action: 'Dunning', EmailId: null });
    } finally {
      await configured.stop();
    }
  });
});
