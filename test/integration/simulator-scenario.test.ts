import { afterAll, describe, expect, it } from 'vitest';
import { EVENT_NAMES, EXTRA_EVENT_NAMES } from '../../src/simulator/event-names.js';
import { startRecordingReceiver, type RecordingReceiver } from '../../src/simulator/recording-receiver.js';
import { RESOURCE_PATHS, RESOURCE_TYPES, type ResourceType } from '../../src/simulator/resource-types.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { waitFor } from '../helpers/wait-for.js';

const running: Array<Simulator | RecordingReceiver> = [];
afterAll(async () => {
  await Promise.all(running.map((r) => r.stop()));
});

/** The resources the loader fetches for an event (docs/CONTRACT.md, "Which resources an event refers to"). */
function refs(p: Record<string, unknown>): Array<[ResourceType, string]> {
  const map: Array<[string, ResourceType]> = [
    ['ContractId', 'Contract'], ['CustomerId', 'Customer'], ['OrderId', 'Order'], ['InvoiceId', 'Invoice'], ['OldInvoiceId', 'Invoice'], ['NewInvoiceId', 'Invoice'],
    ['OldInvoiceDraftId', 'InvoiceDraft'], ['NewInvoiceDraftId', 'InvoiceDraft'], ['DunningId', 'Dunning'], ['PaymentTransactionId', 'PaymentTransaction'], ['PaymentEscalationProcessId', 'PaymentEscalationProcess'],
  ];
  return map.filter(([field]) => typeof p[field] === 'string').map(([field, type]) => [type, String(p[field])]);
}

interface Fetch {
  event: string;
  type: ResourceType;
  id: string;
  status: number;
  body: unknown;
}

async function tokenFor(sim: Simulator): Promise<string> {
  const res = await fetch(`${sim.authUrl}/oauth/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${sim.clientId}:${sim.clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('default scenario over HTTP, received like the loader does', () => {
  it('delivers every event of spec 6.2; fetches on receipt see real states; deleted customers answer 404', async () => {
    const fetches: Fetch[] = [];
    let token = '';
    const receiver = await startRecordingReceiver(async (req) => {
      const payload = req.json as Record<string, unknown>;
      for (const [type, id] of refs(payload)) {
        const res = await fetch(`${sim.baseUrl}/api/v1/${RESOURCE_PATHS[type]}/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${token}` } });
        fetches.push({ event: String(payload.Event), type, id, status: res.status, body: await res.json() });
      }
      return { status: 200 };
    });
    const sim = await startSimulator({ seed: 99, webhookUrl: `${receiver.url}/webhooks`, rateLimit: { requestsPerSecond: 0 }, delivery: { retryBaseDelayMs: 5 }, escalationSettings: true });
    running.push(sim, receiver);
    token = await tokenFor(sim);
    const result = await sim.runScenario({ customers: 12, stepDelayMs: 10 });
    expect(result.completed).toBe(true);
    await waitFor(() => sim.stats().webhooks.delivered === result.events, { what: 'all webhooks delivered', timeoutMs: 30_000 });

    const received = new Set(receiver.received.map((r) => (r.json as { Event: string }).Event));
    expect(EVENT_NAMES.filter((n) => !received.has(n))).toEqual([]);
    expect(receiver.received).toHaveLength(result.events);

    for (const f of fetches) {
      const history = sim.history(f.type, f.id);
      expect(history, `${f.event} → ${f.type} ${f.id}`).toBeDefined();
      if (f.status === 404) {
        expect(history?.deleted, `${f.event} → 404 for ${f.type} ${f.id}, which is not deleted`).toBe(true);
      } else {
        expect(f.status).toBe(200);
        // Whatever was read is a state the object really had.
        expect(history?.states.some((s) => JSON.stringify(s.body) === JSON.stringify(f.body)), `${f.event} → ${f.type} ${f.id}`).toBe(true);
      }
    }
    expect(fetches.filter((f) => f.event === 'CustomerDeleted').every((f) => f.status === 404)).toBe(true);
    expect(fetches.some((f) => f.event === 'CustomerDeleted')).toBe(true);

    // After the run, every object answers its current truth (or 404 once deleted).
    for (const type of RESOURCE_TYPES) {
      for (const id of sim.ids(type)) {
        const res = await fetch(`${sim.baseUrl}/api/v1/${RESOURCE_PATHS[type]}/${id}`, { headers: { authorization: `Bearer ${token}` } });
        if (sim.history(type, id)?.deleted) expect(res.status).toBe(404);
        else expect(await res.json()).toEqual(sim.current(type, id));
      }
    }
    expect(sim.stats().tokensIssued).toBe(1);
  });

  it('is reproducible from its seed', async () => {
    const a = await startSimulator({ seed: 7 });
    const b = await startSimulator({ seed: 7 });
    const c = await startSimulator({ seed: 8 });
    running.push(a, b, c);
    await Promise.all([a.runScenario(), b.runScenario(), c.runScenario()]);
    const fingerprint = (s: Simulator) =>
      JSON.stringify([
        s.events().map((e) => [e.payload, e.simulatedAt]),
        RESOURCE_TYPES.map((t) => s.ids(t).map((id) => s.history(t, id)?.states.map((st) => [st.body, st.simulatedAt, st.deleted]))),
      ]);
    expect(fingerprint(a)).toBe(fingerprint(b));
    expect(fingerprint(a)).not.toBe(fingerprint(c));
    const names = new Set(a.events().map((e) => e.payload.Event));
    expect(names.size).toBe(EVENT_NAMES.length + EXTRA_EVENT_NAMES.length);
  });
});
