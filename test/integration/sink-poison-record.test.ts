import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, metricValue, readDeadLetters, snapshot, webhook, type SinkHarness } from './sink-harness.js';

let h: SinkHarness;
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  await h?.close();
});

describe('sink: a poison record reaches the DLQ and the sink goes on (docs/CONTRACT.md property 7)', () => {
  it('routes undecodable and refused records to the DLQ of their topic, with the reason and source coordinates', async () => {
    await h.produceSnapshots([snapshot('Invoice', 'before', 1, { ok: true })]);
    // (A schema id the registry does not know is not the record's fault: test/integration/sink-unknown-schema.test.ts.)
    const whole = await h.registry.encode(await h.registry.registerFile(`${h.names.snapshots}-value`, 'resource-snapshot.avsc'), snapshot('Invoice', 'truncated', 1, { ok: true }));
    const truncated = whole.subarray(0, 12);
    await h.produceRaw(h.names.snapshots, [
      { key: 'Invoice:garbage', value: Buffer.from('this is not Avro') },
      // Framed, with a schema id the registry knows, but the Avro body is cut short.
      { key: 'Invoice:truncated', value: truncated },
    ]);
    await h.produceSnapshots([
      // Decodes, but breaks the contract (source_event_ids must be UUIDs).
      snapshot('Invoice', 'bad-event-id', 1, { ok: true }, { source_event_ids: ['not-a-uuid'], source_events: ['InvoiceCreated'] }),
      // Valid JSON that PostgreSQL's jsonb refuses: only the database can tell, mid-batch.
      { ...snapshot('Invoice', 'nul-escape', 1, { ok: true }), body: '{"text":"\\u0000"}' },
      snapshot('Invoice', 'after', 1, { ok: true }),
    ]);
    await h.produceRaw(h.names.webhooks, [{ key: 'w', value: Buffer.from([0, 0, 0, 0]) }]);
    const good = webhook('InvoiceCreated', { InvoiceId: 'after' });
    await h.produceWebhooks([good]);

    const sink = await h.startSink();
    await waitFor(async () => (await metricValue(sink.metrics, 'billing_loader_sink_dead_letters_total')) === 5, { what: 'five dead letters' });
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('webhook_events')}`)) === 1, { what: 'good webhook' });

    // The good snapshots' partitions may be written after the dead letters were counted: wait for
    // both, then check nothing else landed.
    const ids = async () => (await h.pool.query<{ resource_id: string }>(`SELECT resource_id FROM ${h.table('resource_versions')} ORDER BY resource_id`)).rows.map((r) => r.resource_id);
    await waitFor(async () => (await ids()).length >= 2, { what: 'the two good snapshots' });
    expect(await ids()).toEqual(['after', 'before']);

    const snapshotLetters = await readDeadLetters(h, h.names.snapshotsDlq, 4);
    const byKey = new Map(snapshotLetters.map((l) => [l.key?.toString(), l]));
    expect(byKey.get('Invoice:garbage')).toMatchObject({ format: 'headers', errorClass: 'decode', sourceTopic: h.names.snapshots, stage: 'sink', value: Buffer.from('this is not Avro') });
    expect(byKey.get('Invoice:truncated')).toMatchObject({ errorClass: 'decode' });
    expect(byKey.get('Invoice:bad-event-id')).toMatchObject({ errorClass: 'invalid-record', errorMessage: expect.stringContaining('not a UUID') });
    expect(byKey.get('Invoice:nul-escape')).toMatchObject({ errorClass: 'rejected-by-database', errorMessage: expect.stringMatching(/SQLSTATE 22/) });
    for (const l of snapshotLetters) expect(Number(l.sourceOffset)).toBeGreaterThanOrEqual(0);

    const webhookLetters = await readDeadLetters(h, h.names.webhooksDlq, 1);
    expect(webhookLetters[0]).toMatchObject({ errorClass: 'decode', sourceTopic: h.names.webhooks });
    await sink.stop();
  });
});
