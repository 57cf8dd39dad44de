import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { contentHash, createSinkHarness, snapshot, webhook, type SinkHarness } from './sink-harness.js';

let h: SinkHarness;
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  await h?.close();
});

describe('sink: versions and webhooks land with the exact columns and values', () => {
  it('writes every field of every snapshot and webhook, unchanged', async () => {
    const e1 = randomUUID();
    const e2 = randomUUID();
    // Property names in any letter case (spec 9.3); the body is stored as fetched.
    const contractV1 = { Id: 'ct-1', customerid: 'cu-9', Plan: 'basic', Note: 'tab\there, newline\nhere, back\\slash, "quote", ünïcode' };
    const contractV2 = { Id: 'ct-1', CUSTOMERID: 'cu-9', Plan: 'pro' };
    const records = [
      snapshot('Contract', 'ct-1', 1, contractV1, { source_event_ids: [e1], source_events: ['ContractCreated'], fetched_at: Date.UTC(2025, 0, 1, 10, 0, 0, 123) }),
      snapshot('Contract', 'ct-1', 2, contractV2, { source_event_ids: [e2, e1], source_events: ['ContractChanged', 'ContractCreated'], fetched_at: Date.UTC(2025, 0, 2) }),
      snapshot('Customer', 'cu-9', 1, { Id: 'cu-9', Name: 'A' }),
      snapshot('Customer', 'cu-9', 2, null, { fetched_at: Date.UTC(2025, 0, 3) }),
    ];
    await h.produceSnapshots(records);
    // The first webhook is the one both contract versions cite (e1); e2 never arrives.
    const hooks = [{ ...webhook('ContractCreated', { ContractId: 'ct-1' }, Date.UTC(2025, 0, 1, 9, 59, 59, 7)), event_id: e1 }, webhook('SomethingNew', { Extra: [1, 2, { x: null }] })];
    await h.produceWebhooks(hooks);

    const sink = await h.startSink();
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 4 && (await h.count(`SELECT count(*) n FROM ${h.table('webhook_events')}`)) === 2, {
      what: 'rows written',
    });

    const { rows } = await h.pool.query(
      `SELECT resource_type, resource_id, version, fetched_at, deleted, body::text AS body_text, body, content_hash,
              source_event_ids::text[] AS source_event_ids, source_events, customer_id, kafka_partition, kafka_offset
         FROM ${h.table('resource_versions')} ORDER BY resource_type, resource_id, version`,
    );
    expect(rows).toEqual([
      {
        resource_type: 'Contract', resource_id: 'ct-1', version: 1, fetched_at: new Date(Date.UTC(2025, 0, 1, 10, 0, 0, 123)), deleted: false,
        body_text: expect.any(String), body: contractV1, content_hash: contentHash(JSON.stringify(contractV1)),
        source_event_ids: [e1], source_events: ['ContractCreated'], customer_id: 'cu-9', kafka_partition: expect.any(Number), kafka_offset: '0',
      },
      {
        resource_type: 'Contract', resource_id: 'ct-1', version: 2, fetched_at: new Date(Date.UTC(2025, 0, 2)), deleted: false,
        body_text: expect.any(String), body: contractV2, content_hash: contentHash(JSON.stringify(contractV2)),
        source_event_ids: [e2, e1], source_events: ['ContractChanged', 'ContractCreated'], customer_id: 'cu-9', kafka_partition: expect.any(Number), kafka_offset: '1',
      },
      {
        resource_type: 'Customer', resource_id: 'cu-9', version: 1, fetched_at: new Date(records[2]!.fetched_at), deleted: false,
        body_text: expect.any(String), body: { Id: 'cu-9', Name: 'A' }, content_hash: contentHash(JSON.stringify({ Id: 'cu-9', Name: 'A' })),
        source_event_ids: [], source_events: [], customer_id: null, kafka_partition: expect.any(Number), kafka_offset: expect.any(String),
      },
      {
        resource_type: 'Customer', resource_id: 'cu-9', version: 2, fetched_at: new Date(Date.UTC(2025, 0, 3)), deleted: true,
        body_text: null, body: null, content_hash: 'deleted',
        source_event_ids: [], source_events: [], customer_id: null, kafka_partition: expect.any(Number), kafka_offset: expect.any(String),
      },
    ]);
    // The special characters survive COPY's escaping byte for byte.
    expect(JSON.parse(rows[0].body_text as string).Note).toBe(contractV1.Note);

    // The public view answers the same values under the docs/CONTRACT.md names.
    // notified_at: the earliest receipt among the webhooks a version cites that the warehouse holds.
    const history = await h.pool.query(
      `SELECT resource_id, version, valid_from, valid_to, is_current, deleted, body, content_hash, source_event_id, source_event, customer_id, notified_at
         FROM ${h.table('contract_history')} ORDER BY version`,
    );
    const notified = new Date(Date.UTC(2025, 0, 1, 9, 59, 59, 7));
    expect(history.rows).toEqual([
      {
        resource_id: 'ct-1', version: 1, valid_from: new Date(Date.UTC(2025, 0, 1, 10, 0, 0, 123)), valid_to: new Date(Date.UTC(2025, 0, 2)), is_current: false, deleted: false,
        body: contractV1, content_hash: contentHash(JSON.stringify(contractV1)), source_event_id: e1, source_event: 'ContractCreated', customer_id: 'cu-9', notified_at: notified,
      },
      {
        resource_id: 'ct-1', version: 2, valid_from: new Date(Date.UTC(2025, 0, 2)), valid_to: null, is_current: true, deleted: false,
        body: contractV2, content_hash: contentHash(JSON.stringify(contractV2)), source_event_id: e2, source_event: 'ContractChanged', customer_id: 'cu-9', notified_at: notified,
      },
    ]);
    const current = await h.pool.query(`SELECT resource_id, version, notified_at, loaded_at FROM ${h.table('contract_current')}`);
    expect(current.rows).toEqual([{ resource_id: 'ct-1', version: 2, notified_at: notified, loaded_at: expect.any(Date) }]);

    const events = await h.pool.query(`SELECT event_id, event, received_at, payload FROM ${h.table('webhook_events')} ORDER BY received_at`);
    expect(events.rows).toEqual(
      hooks
        .map((w) => ({ event_id: w.event_id, event: w.event, received_at: new Date(w.received_at), payload: JSON.parse(w.body) }))
        .sort((a, b) => a.received_at.getTime() - b.received_at.getTime()),
    );
    await sink.stop();
  });
});
