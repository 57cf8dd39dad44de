import { describe, expect, it } from 'vitest';
import { dueAt } from './delay-forwarder.js';
import { decodeFetchRequest, encodeFetchRequest, type FetchRequest } from '../wire/fetch-request.js';

const request: FetchRequest = { type: 'Contract', id: 'c1', eventId: 'e1', event: 'ContractCreated', receivedAt: 5, source: null };

describe('delayed requests', () => {
  it('carry their retry state through the wire format', () => {
    const retry = { reason: 'gone-unconfirmed', attempt: 1, since: 10, dueAt: 20, headVersion: 3 } as const;
    expect(decodeFetchRequest(encodeFetchRequest({ ...request, retry }).value).retry).toEqual(retry);
    expect(decodeFetchRequest(encodeFetchRequest(request).value).retry).toBeUndefined();
  });

  it('are due at their due time; a request without one, or one that cannot be read, at once', () => {
    expect(dueAt({ value: encodeFetchRequest({ ...request, retry: { reason: 'not-found-yet', attempt: 2, since: 1, dueAt: 1234 } }).value })).toBe(1234);
    expect(dueAt({ value: encodeFetchRequest(request).value })).toBe(0);
    expect(dueAt({ value: Buffer.from('not json') })).toBe(0);
  });

  it('a retry state this version did not write is dropped, not trusted', () => {
    const value = Buffer.from(JSON.stringify({ v: 1, ...request, retry: { reason: 'whatever', attempt: 1, since: 0, dueAt: 0 } }));
    expect(decodeFetchRequest(value).retry).toBeUndefined();
  });
});
