import { describe, expect, it } from 'vitest';
import { InvalidRecordError, customerIdOf, toSnapshotRow, toWebhookRow } from './records.js';

const at = { topic: 't', partition: 1, offset: '7' };
const valid = {
  resource_type: 'Contract',
  resource_id: 'c-1',
  version: 1,
  fetched_at: 1_700_000_000_000,
  deleted: false,
  content_hash: 'h',
  body: '{"customerId":"cu-1"}',
  source_event_ids: ['0b7c8f5e-1d2a-4c3b-9e8f-123456789abc'],
  source_events: ['ContractCreated'],
};

describe('snapshot records', () => {
  it('maps a valid record, with the contract customer found in any letter case', () => {
    expect(toSnapshotRow(valid, at)).toMatchObject({ resourceId: 'c-1', customerId: 'cu-1', coordinates: at });
    expect(customerIdOf('{"CUSTOMERID":"x","nested":{"CustomerId":"y"}}')).toBe('x');
    expect(customerIdOf('{"nested":{"CustomerId":"y"}}')).toBeNull();
    expect(toSnapshotRow({ ...valid, resource_type: 'Customer', body: 'not json' }, at).customerId).toBeNull();
  });

  it.each([
    ['version 0', { version: 0 }],
    ['deleted with a body', { deleted: true }],
    ['no body while not deleted', { body: null }],
    ['a source event id that is no UUID', { source_event_ids: ['x'] }],
    ['events not parallel to ids', { source_events: [] }],
    ['a NUL in the id', { resource_id: 'a\u0000b' }],
    ['a contract body that is not JSON', { body: '{' }],
    ['a timestamp out of range', { fetched_at: 1e300 }],
  ])('refuses %s', (_what, patch) => {
    expect(() => toSnapshotRow({ ...valid, ...patch }, at)).toThrow(InvalidRecordError);
  });
});

describe('webhook records', () => {
  it('needs a UUID event id, an event name, a time and the body', () => {
    const ok = { event_id: '0b7c8f5e-1d2a-4c3b-9e8f-123456789abc', event: 'X', received_at: 1, body: '{}' };
    expect(toWebhookRow(ok, at)).toMatchObject({ eventId: ok.event_id, receivedAtMs: 1 });
    expect(toWebhookRow({ ...ok, received_at: new Date(5) }, at).receivedAtMs).toBe(5);
    expect(() => toWebhookRow({ ...ok, event_id: 'e' }, at)).toThrow(InvalidRecordError);
    expect(() => toWebhookRow({ ...ok, body: undefined }, at)).toThrow(InvalidRecordError);
  });
});
