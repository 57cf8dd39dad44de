import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiRejectedError } from '../../src/billing-api/api-errors.js';
import { runBackfill } from '../../src/backfill/backfill.js';
import { createBillingApiClient } from '../../src/billing-api/client.js';
import type { ResourceType } from '../../src/billing-api/resource-types.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

// The service documents "skip is limited to 1000 elements" and a stable `from=<Id>` cursor with
// `take` up to 500 (docs/BILLING-API.md, "Lists"); the sandbox refuses skip past 1000 with 400.
const CONTRACTS = 5000;

let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness();
  // Objects that exist before the loader is pointed at the service: no webhook reaches us.
  h.sim.setWebhookUrl(undefined);
  for (let i = 0; i < CONTRACTS; i++) h.sim.billing.signup();
}, 120_000);
afterAll(async () => {
  await h?.stop();
});

const backfill = async (types: ResourceType[], options: { restart?: boolean } = {}) => {
  const api = createBillingApiClient({ ...h.sim.clientOptions(), requestsPerSecond: 100 });
  try {
    return await runBackfill({ kafka: createKafka({ brokers: h.config.kafkaBrokers, clientId: 'backfill-test', log: silentLogger }), api, log: silentLogger }, { topicPrefix: h.config.topicPrefix, types, ...options });
  } finally {
    await api.close();
  }
};

const liveContracts = () => h.sim.ids('Contract').filter((id) => h.sim.current('Contract', id));

describe('backfill through cursor pages', () => {
  it('the sandbox refuses skip past 1000: a skip-based backfill cannot reach the 5,000 contracts', async () => {
    const api = createBillingApiClient({ ...h.sim.clientOptions(), requestsPerSecond: 100 });
    try {
      let listed = 0;
      let refused: unknown;
      for (let skip = 0; skip < CONTRACTS && refused === undefined; skip += 500) {
        try {
          listed += (await api.listResources('Contract', { skip, take: 500 })).items.length;
        } catch (err) {
          refused = err;
        }
      }
      expect(refused).toBeInstanceOf(ApiRejectedError);
      expect((refused as ApiRejectedError).context.status).toBe(400);
      expect(listed).toBe(1500);
    } finally {
      await api.close();
    }
  });

  it('loads every one of 5,000 contracts once, in pages of 500 with an inclusive `from` cursor', async () => {
    const contracts = liveContracts();
    expect(contracts.length).toBe(CONTRACTS);
    h.sim.resetRequestStats();
    const result = await backfill(['Contract']);
    expect(result.incomplete).toEqual([]);
    expect(result.objects.Contract).toBe(CONTRACTS);
    // 10 full pages and the empty one that ends the list: each page after the first repeats the cursor's object.
    expect(h.sim.stats().requests.byRoute['GET /api/v1/Contracts']).toEqual({ 200: 11 });
    await waitFor(() => contracts.every((id) => h.versionsOf('Contract', id).length >= 1), { timeoutMs: 120_000, what: 'every contract versioned' });
    for (const id of contracts) expect(h.versionsOf('Contract', id).map((v) => v.version)).toEqual([1]);
    expect(h.deadLetters).toEqual([]);
  }, 180_000);

  it('resumes an interrupted type at its saved cursor, without the object the cursor names', async () => {
    const stop = new AbortController();
    const api = createBillingApiClient({ ...h.sim.clientOptions(), requestsPerSecond: 100 });
    const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'backfill-test', log: silentLogger });
    try {
      // Interrupted once the first page is acknowledged (its cursor saved).
      const first = await runBackfill({ kafka, api, log: silentLogger, progress: () => stop.abort() }, { topicPrefix: h.config.topicPrefix, types: ['Contract'], signal: stop.signal });
      expect(first.objects.Contract).toBeUndefined();
    } finally {
      await api.close();
    }
    const lines: string[] = [];
    const api2 = createBillingApiClient({ ...h.sim.clientOptions(), requestsPerSecond: 100 });
    try {
      const second = await runBackfill({ kafka, api: api2, log: silentLogger, progress: (l) => lines.push(l) }, { topicPrefix: h.config.topicPrefix, types: ['Contract'] });
      expect(lines[0]).toBe(`backfill: Contract: resuming at ${[...liveContracts()].sort()[499]}`);
      expect(second.objects.Contract).toBe(CONTRACTS - 500);
    } finally {
      await api2.close();
    }
  }, 120_000);
});

describe('backfill of a type without a cursor (invoice drafts: skip/take)', () => {
  it('stops that type with a clear reason when the service refuses skip past 1000, and goes on with the others', async () => {
    const contracts = liveContracts().slice(0, 1600);
    for (const id of contracts) h.sim.payments.bill(id);
    const drafts = h.sim.ids('InvoiceDraft').filter((id) => h.sim.current('InvoiceDraft', id));
    expect(drafts.length).toBeGreaterThan(1500);
    const result = await backfill(['InvoiceDraft', 'Order'], { restart: true });
    expect(result.incomplete).toHaveLength(1);
    expect(result.incomplete[0]?.type).toBe('InvoiceDraft');
    expect(result.incomplete[0]?.reason).toMatch(/refused skip=\d+ .*limited to 1000/);
    expect(result.objects.InvoiceDraft).toBe(1500);
    expect(result.objects.Order).toBe(h.sim.ids('Order').filter((id) => h.sim.current('Order', id)).length);
  }, 180_000);
});
