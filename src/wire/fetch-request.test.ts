import { describe, expect, it } from 'vitest';
import { decodeFetchRequest, encodeFetchRequest, type FetchRequest } from './fetch-request.js';

const request: FetchRequest = {
  type: 'Contract',
  id: 'c1',
  eventId: 'e1',
  event: 'ContractChanged',
  receivedAt: 1_700_000_000_000,
  source: { topic: 't.webhooks', partition: 2, offset: '41' },
  siblings: ['Customer:cu1'],
  retry: { reason: 'not-found-yet', attempt: 2, since: 1_700_000_000_000, dueAt: 1_700_000_005_000 },
};
const json = (value: Record<string, unknown>) => Buffer.from(JSON.stringify(value));

describe('fetch request formats', () => {
  it('writes format 1, which every release so far reads', () => {
    expect(JSON.parse(encodeFetchRequest(request).value.toString())).toMatchObject({ v: 1 });
    expect(decodeFetchRequest(encodeFetchRequest(request).value)).toEqual(request);
  });

  it('reads a newer format that declares format 1 readers enough, keeping the fields it knows', () => {
    // What a later release writes when it only adds fields: its own number, and the oldest reader that can use the record.
    const newer = json({ v: 2, readableFrom: 1, ...request, priority: 'high', source: { ...request.source, leaderEpoch: 7 }, retry: { ...request.retry, jitterMs: 40 } });
    expect(decodeFetchRequest(newer)).toEqual(request);
    const prefetched = { body: '{"Id":"c1"}', fetchedAt: 5 };
    expect(decodeFetchRequest(json({ v: 2, readableFrom: 1, ...request, prefetched: { ...prefetched, etag: 'x' } })).prefetched).toEqual(prefetched);
  });

  it('refuses a newer format that needs a newer reader, saying which', () => {
    expect(() => decodeFetchRequest(json({ v: 3, readableFrom: 2, ...request }))).toThrow('fetch request format 3 needs a reader of format 2 or later; this one reads up to 1');
    // A newer format that says nothing about its readers is one this reader cannot know it understands.
    expect(() => decodeFetchRequest(json({ v: 2, ...request }))).toThrow('fetch request format 2 needs a reader of format 2 or later; this one reads up to 1');
  });

  it('refuses a record without a format number', () => {
    for (const v of [undefined, 0, '1', 1.5]) expect(() => decodeFetchRequest(json({ v, ...request })), String(v)).toThrow(/fetch request without a format number/);
  });
});
