import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enricherTopics } from '../../src/wire/topics.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import type { ResourceReader } from '../../src/enricher/resource-reader.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * What the fetcher makes of answers that are not plainly "here it is": a 404 right after a
 * creation, a single flaky 404, a body that is not JSON, a list page older than the history,
 * and an escalation reset. Real Kafka and registry, the simulator's
 * API; a thin wrapper around the real client scripts answers for chosen ids.
 */
const MAINTENANCE = '<!DOCTYPE html><html><body>Down for maintenance</body></html>';

/** Scripted answers per id (used up in order), and a lag: the contracts in `lag.ids` answer 404 for `lagMs` after their first read. */
const script = new Map<string, ('404' | 'html')[]>();
const reads = new Map<string, number>();
const lag = { ids: new Set<string>(), lagMs: 1500, firstRead: new Map<string, number>() };

const scripted = (api: ResourceReader): ResourceReader => ({
  async getResource(type, id) {
    reads.set(id, (reads.get(id) ?? 0) + 1);
    const next = script.get(id)?.shift();
    if (next === '404') return { kind: 'gone' };
    if (next === 'html') return { kind: 'found', body: MAINTENANCE };
    if (type === 'Contract' && lag.ids.has(id)) {
      const first = lag.firstRead.get(id) ?? Date.now();
      lag.firstRead.set(id, first);
      if (Date.now() - first < lag.lagMs) return { kind: 'gone' };
    }
    return api.getResource(type, id);
  },
});

let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness({
    reader: (_sim, api) => scripted(api),
    // The escalation settings read where the sandbox serves them, with no interval between reads: the reset below still reads none.
    env: { ENRICHER_NOT_FOUND_WINDOW_MS: '4000', ENRICHER_GONE_CONFIRM_MS: '1000', ENRICHER_UNREADABLE_ATTEMPTS: '3', ENRICHER_COALESCE_MS: '0', BILLING_PATH_PAYMENT_ESCALATION_PROCESS: 'PaymentEscalationProcesses', ENRICHER_ESCALATION_SETTINGS_INTERVAL_MS: '0' },
  });
});
afterAll(async () => {
  await h?.stop();
});

/**
 * Every webhook delivered and every read it causes done. A late OrderSucceeded of a signup names
 * its contract too: read while the API answers HTML, it adds dead letters of its own.
 */
const signupsRead = async () => {
  await waitFor(() => h.sim.deliveries().every((d) => d.outcome !== 'pending'), { what: 'webhooks delivered' });
  await h.flushEnricher();
};

const lettersFor = (id: string) => h.deadLetters.filter((d) => String(d.value).includes(id));

describe('enricher: a 404 of a resource never seen', () => {
  it('is read again with backoff, so a contract that answers 404 right after ContractCreated still gets its first version', async () => {
    const s = h.sim.billing.signup();
    // Webhooks leave the simulator asynchronously, so the lag is in place before the first read.
    lag.ids.add(s.contractId);
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'contract v1 after read-after-write lag' });
    expect(JSON.parse(h.versionsOf('Contract', s.contractId)[0]?.body as string)).toEqual(h.sim.current('Contract', s.contractId));
    // Caused by the signup's webhooks that name the contract: ContractCreated's reread, or another
    // of them (AccountCreated, OrderSucceeded) when its read comes first after the lag, which on
    // a busy machine it can; ContractCreated's reread then finds the same content and adds no version.
    const naming = new Set(h.sim.deliveries().filter((d) => JSON.stringify(d.payload).includes(s.contractId)).map((d) => d.payload.Event));
    expect(naming).toContain('ContractCreated');
    const sources = h.versionsOf('Contract', s.contractId)[0]?.source_events ?? [];
    expect(sources.length).toBeGreaterThan(0);
    expect(sources.filter((e) => !naming.has(e))).toEqual([]);
    expect(reads.get(s.contractId)).toBeGreaterThan(1);
    expect(lettersFor(s.contractId)).toEqual([]);
  });

  it('is given up after the window with a dead letter saying why, and a forged id creates no version', async () => {
    const forged = 'forged-0000000000read-rules';
    h.sim.emit({ Event: 'ContractChanged', ContractId: forged });
    await waitFor(() => lettersFor(forged).length === 1, { what: 'give-up dead letter', timeoutMs: 30_000 });
    expect(lettersFor(forged)[0]).toMatchObject({ stage: 'enricher', errorClass: 'not-found', sourceTopic: enricherTopics(h.config.topicPrefix).requests });
    expect(String(lettersFor(forged)[0]?.errorMessage)).toContain('404');
    expect(reads.get(forged)).toBeGreaterThanOrEqual(2);
    expect(h.versionsOf('Contract', forged)).toEqual([]);
    expect(await h.metricsText()).toMatch(/billing_loader_enricher_given_up_total\{type="Contract",reason="not-found"\} [1-9]/);
  });

  it('a reread waiting for its time survives a restart of the enricher', async () => {
    const s = h.sim.billing.signup();
    lag.ids.add(s.contractId);
    await waitFor(() => (reads.get(s.contractId) ?? 0) >= 1, { what: 'first read (a 404)' });
    // The reread is in Kafka only (delay topic), not in a timer of the stopped instance.
    await h.restartEnricher();
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'contract v1 after the restart' });
    expect(reads.get(s.contractId)).toBeGreaterThan(1);
  });
});

describe('enricher: a 404 of a resource with versions', () => {
  it('is confirmed by a second read after a delay: one flaky 404 writes no deletion and no resurrection', async () => {
    const s = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'contract v1' });
    const before = reads.get(s.contractId) ?? 0;
    script.set(s.contractId, ['404']);
    h.sim.emit({ Event: 'ContractChanged', ContractId: s.contractId });
    // The flaky read, then the confirming read (which finds the contract).
    await waitFor(() => (reads.get(s.contractId) ?? 0) >= before + 2, { what: 'flaky read and its confirmation' });
    h.sim.billing.changePlan(s.contractId, 1);
    await waitFor(() => h.versionsOf('Contract', s.contractId).length >= 2, { what: 'contract v2' });
    await h.flushEnricher();
    const versions = h.versionsOf('Contract', s.contractId);
    expect(versions.map((v) => v.deleted)).toEqual([false, false]);
    expect(JSON.parse(versions[1]?.body as string)).toEqual(h.sim.current('Contract', s.contractId));
  });

  it('a 404 that stays is a deletion, written once', async () => {
    const s = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Customer', s.customerId).length === 1, { what: 'customer v1' });
    h.sim.billing.deleteCustomer(s.customerId);
    await waitFor(() => h.versionsOf('Customer', s.customerId).some((v) => v.deleted), { what: 'deleted version' });
    await h.flushEnricher();
    expect(h.versionsOf('Customer', s.customerId).map((v) => v.deleted)).toEqual([false, true]);
  });
});

describe('enricher: an answer it cannot read', () => {
  it('is read again a bounded number of times, then dead-lettered with the reason; other resources keep flowing', async () => {
    const stuck = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Contract', stuck.contractId).length === 1, { what: 'contract v1' });
    await signupsRead();
    const before = reads.get(stuck.contractId) ?? 0;
    script.set(stuck.contractId, Array<'html'>(10).fill('html'));
    h.sim.emit({ Event: 'ContractChanged', ContractId: stuck.contractId });
    const other = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Contract', other.contractId).length === 1, { what: 'other work goes on' });
    await waitFor(() => lettersFor(stuck.contractId).length >= 1, { what: 'unreadable dead letter', timeoutMs: 30_000 });
    expect(lettersFor(stuck.contractId)).toHaveLength(1);
    expect(lettersFor(stuck.contractId)[0]).toMatchObject({ stage: 'enricher', errorClass: 'unreadable-body' });
    expect(String(lettersFor(stuck.contractId)[0]?.errorMessage)).toContain('not JSON');
    expect((reads.get(stuck.contractId) ?? 0) - before).toBe(3);
    expect(await h.metricsText()).toMatch(/billing_loader_enricher_given_up_total\{type="Contract",reason="unreadable-body"\} [1-9]/);
    expect(h.versionsOf('Contract', stuck.contractId)).toHaveLength(1);
    script.delete(stuck.contractId);
  });

  it('a maintenance page served by the API over HTTP ends the same way', async () => {
    const s = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'contract v1' });
    await signupsRead();
    h.sim.setFaults({ unreadableRate: 1 });
    try {
      h.sim.emit({ Event: 'ContractChanged', ContractId: s.contractId });
      await waitFor(() => lettersFor(s.contractId).length >= 1, { what: 'unreadable dead letter', timeoutMs: 30_000 });
    } finally {
      h.sim.setFaults({ unreadableRate: 0 });
    }
    expect(lettersFor(s.contractId)).toHaveLength(1);
    expect(lettersFor(s.contractId)[0]).toMatchObject({ errorClass: 'unreadable-body' });
    h.sim.billing.changePlan(s.contractId, 1);
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 2, { what: 'v2 once the API answers JSON again' });
  });
});

describe('enricher: a list page older than the history', () => {
  it('never puts an older state after a newer one', async () => {
    const s = h.sim.billing.signup();
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'contract v1' });
    const old = h.versionsOf('Contract', s.contractId)[0]?.body as string;
    const pageReadAt = Date.now();
    h.sim.billing.changePlan(s.contractId, 1);
    await waitFor(() => h.versionsOf('Contract', s.contractId).length === 2, { what: 'contract v2' });
    // The backfill's list page, read before the change, is processed after it.
    const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'old-page', log: silentLogger });
    const producer = kafka.producer({ createPartitioner: defaultPartitioner });
    await producer.connect();
    await producer.send({
      topic: enricherTopics(h.config.topicPrefix).requests,
      acks: -1,
      messages: [encodeFetchRequest({ type: 'Contract', id: s.contractId, eventId: null, event: null, receivedAt: pageReadAt, source: null, prefetched: { body: old, fetchedAt: pageReadAt } })],
    });
    await producer.disconnect();
    await h.flushEnricher();
    const versions = h.versionsOf('Contract', s.contractId);
    expect(versions).toHaveLength(2);
    expect(JSON.parse(versions[1]?.body as string)).toEqual(h.sim.current('Contract', s.contractId));
  });
});

describe('enricher: an escalation reset', () => {
  it('reads the contract again, so its latest version shows the settled balance; the shared settings are not read again', async () => {
    const s = h.sim.billing.signup({ trial: false });
    const invoiceId = h.sim.payments.bill(s.contractId);
    h.sim.payments.collect(s.contractId, invoiceId, false);
    h.sim.payments.escalate(s.contractId);
    const owing = (v: { body: unknown }) => Number((JSON.parse(v.body as string) as { Balance?: number }).Balance) < 0;
    await waitFor(() => h.versionsOf('Contract', s.contractId).some(owing), { what: 'the escalated contract read, owing' });
    await h.flushEnricher();
    const settingsVersions = h.versionsOf('PaymentEscalationProcess', h.sim.escalationSettingsId).length;
    h.sim.payments.registerPayment(s.contractId);
    // The reset changes no documented field of the contract beyond what the payment did: the
    // event is the record, and the contract read after it shows the balance it was reset on.
    await waitFor(() => h.versionsOf('Contract', s.contractId).some((v) => !owing(v) && (v.source_events as string[]).includes('PaymentEscalationReset')), { what: 'the contract read after the reset' });
    const latest = h.versionsOf('Contract', s.contractId).at(-1);
    expect(JSON.parse(latest?.body as string)).toEqual(h.sim.current('Contract', s.contractId));
    await h.flushEnricher();
    expect(h.versionsOf('PaymentEscalationProcess', h.sim.escalationSettingsId)).toHaveLength(settingsVersions);
  });
});
