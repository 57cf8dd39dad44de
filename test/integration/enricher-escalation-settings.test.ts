import { afterEach, describe, expect, it } from 'vitest';
import { enricherGroupId } from '../../src/enricher/enricher.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import { enricherTopics, topicNames } from '../../src/wire/topics.js';
import { groupLag } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

// The PaymentEscalationProcessId of PaymentEscalated names the legal entity's escalation
// settings, with no documented path: the enricher reads it only where a path is configured,
// and then at most once per id per ENRICHER_ESCALATION_SETTINGS_INTERVAL_MS.
const PROCESS_READS = 'GET /api/v1/PaymentEscalationProcesses/:id';

let h: EnricherHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** A contract in escalation, known to the loader; returns the id its PaymentEscalated names. */
async function escalated(harness: EnricherHarness): Promise<{ contractId: string; customerId: string; processId: string }> {
  const s = harness.sim.billing.signup({ trial: false });
  const invoiceId = harness.sim.payments.bill(s.contractId);
  harness.sim.payments.collect(s.contractId, invoiceId, false);
  const { processId } = harness.sim.payments.escalate(s.contractId);
  // The escalation's webhook routed and every read requested by then done. Not "a version caused
  // by PaymentEscalated": a read an earlier webhook caused may already find the contract escalated
  // (a slow read, on a busy machine), and then the escalation's own read stores no new version.
  await waitFor(() => harness.sim.events().filter((e) => e.payload.Event === 'PaymentEscalated').length === 1, { what: 'the escalation sent' });
  await waitFor(() => harness.sim.deliveries().every((d) => d.outcome !== 'pending'), { what: 'deliveries done' });
  const kafka = createKafka({ brokers: harness.config.kafkaBrokers, clientId: 'escalation-routed', log: silentLogger });
  await waitFor(async () => (await groupLag(kafka, enricherGroupId(harness.config.topicPrefix), topicNames(harness.config.topicPrefix).webhooks)) === 0, { what: 'the escalation routed', intervalMs: 200 });
  await harness.flushEnricher();
  expect(harness.versionsOf('Contract', s.contractId).length).toBeGreaterThan(0);
  return { ...s, processId };
}

/** Every delivery done, and every read it caused. */
async function settled(harness: EnricherHarness): Promise<void> {
  await waitFor(() => harness.sim.deliveries().every((d) => d.outcome !== 'pending'), { what: 'deliveries done' });
  await harness.flushEnricher();
}

describe('escalation settings reads', () => {
  it('by default PaymentEscalated webhooks cause no escalation-process read at all', async () => {
    h = await startEnricherHarness();
    h.sim.resetRequestStats();
    const { contractId, customerId, processId } = await escalated(h);
    h.sim.emit({ Event: 'PaymentEscalated', ContractId: contractId, CustomerId: customerId, PaymentEscalationProcessId: processId, TriggerDays: 10 });
    await settled(h);
    expect(h.sim.stats().requests.byRoute[PROCESS_READS]).toBeUndefined();
    expect(h.versionsOf('PaymentEscalationProcess', processId)).toEqual([]);
    expect(h.deadLetters).toEqual([]);
  });

  it('by default a request for one already queued (from before an upgrade) is not read either', async () => {
    h = await startEnricherHarness();
    const { processId } = await escalated(h);
    await settled(h);
    h.sim.resetRequestStats();
    const producer = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'queued-request', log: silentLogger }).producer({ createPartitioner: defaultPartitioner });
    await producer.connect();
    await producer.send({ topic: enricherTopics(h.config.topicPrefix).requests, acks: -1, messages: [encodeFetchRequest({ type: 'PaymentEscalationProcess', id: processId, eventId: null, event: null, receivedAt: Date.now(), source: null })] });
    await producer.disconnect();
    await h.flushEnricher();
    expect(h.sim.stats().requests.byRoute[PROCESS_READS]).toBeUndefined();
    expect(h.deadLetters).toEqual([]);
  });

  it('with a path configured: read once, and not again within the interval however many escalations name it', async () => {
    h = await startEnricherHarness({ env: { BILLING_PATH_PAYMENT_ESCALATION_PROCESS: 'PaymentEscalationProcesses' } });
    h.sim.resetRequestStats();
    const { contractId, customerId, processId } = await escalated(h);
    await waitFor(() => h!.versionsOf('PaymentEscalationProcess', processId).length === 1, { what: 'the settings read' });
    for (const days of [10, 20, 30]) h.sim.emit({ Event: 'PaymentEscalated', ContractId: contractId, CustomerId: customerId, PaymentEscalationProcessId: processId, TriggerDays: days });
    await settled(h);
    expect(h.sim.stats().requests.byRoute[PROCESS_READS]).toEqual({ 200: 1 });
    expect(h.deadLetters).toEqual([]);
  });
});
