import { describe, expect, it } from 'vitest';
import type { FetchRequest, RetryState } from '../wire/fetch-request.js';
import { decideRead, parseBody, usablePrefetched, type RetryRules } from './read-decision.js';

const rules: RetryRules = { notFoundWindowMs: 10_000, goneConfirmMs: 3000, unreadableAttempts: 3, baseDelayMs: 1000, maxDelayMs: 4000 };
const head = { version: 2, contentHash: 'h2', deleted: false, fetchedAt: 500 };
const found = { kind: 'found', contentHash: 'x' } as const;
const gone = { kind: 'gone' } as const;

describe('decideRead', () => {
  it('versions a found object whatever came before', () => {
    expect(decideRead(undefined, found, [undefined], 0, rules)).toEqual({ action: 'apply', outcome: found });
    expect(decideRead(head, found, [{ reason: 'gone-unconfirmed', attempt: 1, since: 0, dueAt: 1, headVersion: 2 }], 0, rules)).toEqual({ action: 'apply', outcome: found });
  });

  it('reads a never-seen 404 again with backoff until the window ends, the last read on its end, then gives up', () => {
    const first = decideRead(undefined, gone, [undefined], 1000, rules);
    expect(first).toEqual({ action: 'retry', retry: { reason: 'not-found-yet', attempt: 1, since: 1000, dueAt: 2000 } });
    const chain: RetryState = { reason: 'not-found-yet', attempt: 3, since: 1000, dueAt: 9000 };
    expect(decideRead(undefined, gone, [chain], 9000, rules)).toEqual({ action: 'retry', retry: { reason: 'not-found-yet', attempt: 4, since: 1000, dueAt: 11_000 } });
    const last = decideRead(undefined, gone, [{ ...chain, attempt: 4 }], 11_000, rules);
    expect(last).toMatchObject({ action: 'give-up', reason: 'not-found' });
  });

  it('a fresh webhook request for a never-seen id starts a new window', () => {
    const old: RetryState = { reason: 'not-found-yet', attempt: 5, since: 0, dueAt: 20_000 };
    expect(decideRead(undefined, gone, [old, undefined], 20_000, rules)).toEqual({ action: 'retry', retry: { reason: 'not-found-yet', attempt: 1, since: 20_000, dueAt: 21_000 } });
  });

  it('believes a 404 of a live resource only from a read after the confirmation delay with no version in between', () => {
    const first = decideRead(head, gone, [undefined], 1000, rules);
    expect(first).toEqual({ action: 'retry', retry: { reason: 'gone-unconfirmed', attempt: 1, since: 1000, dueAt: 4000, headVersion: 2 } });
    const confirm = first.action === 'retry' ? first.retry : undefined;
    expect(decideRead(head, gone, [confirm], 4000, rules)).toEqual({ action: 'apply', outcome: gone });
    expect(decideRead({ ...head, version: 3 }, gone, [confirm], 4000, rules)).toMatchObject({ action: 'retry', retry: { headVersion: 3 } });
  });

  it('a 404 of a deleted resource is applied (nextVersion makes nothing of it)', () => {
    expect(decideRead({ ...head, deleted: true }, gone, [undefined], 0, rules)).toEqual({ action: 'apply', outcome: gone });
  });

  it('reads an unreadable body again a bounded number of times, then gives up', () => {
    const u = { kind: 'unreadable', problem: 'not JSON' } as const;
    expect(decideRead(head, u, [undefined], 0, rules)).toEqual({ action: 'retry', retry: { reason: 'unreadable', attempt: 1, since: 0, dueAt: 1000 } });
    expect(decideRead(head, u, [{ reason: 'unreadable', attempt: 1, since: 0, dueAt: 1000 }], 1000, rules)).toMatchObject({ action: 'retry', retry: { attempt: 2, dueAt: 3000 } });
    expect(decideRead(head, u, [{ reason: 'unreadable', attempt: 2, since: 0, dueAt: 3000 }], 3000, rules)).toMatchObject({ action: 'give-up', reason: 'unreadable-body' });
  });
});

describe('usablePrefetched', () => {
  const req = (fetchedAt: number, extra: Partial<FetchRequest> = {}): FetchRequest => ({ type: 'Contract', id: 'c', eventId: null, event: null, receivedAt: fetchedAt, source: null, prefetched: { body: `{"Id":"c","n":${fetchedAt}}`, fetchedAt }, ...extra });

  it('uses the newest list body of a resource with no version', () => {
    expect(usablePrefetched([req(1), req(3), req(2)], undefined)?.fetchedAt).toBe(3);
  });

  it('never uses a list body for a resource with a version: the page may be older than it', () => {
    expect(usablePrefetched([req(1000)], head)).toBeUndefined();
  });

  it('never for a webhook request or a reread', () => {
    expect(usablePrefetched([req(1), { ...req(2), prefetched: undefined }], undefined)).toBeUndefined();
    expect(usablePrefetched([req(1, { retry: { reason: 'unreadable', attempt: 1, since: 0, dueAt: 0 } })], undefined)).toBeUndefined();
  });
});

describe('parseBody', () => {
  it('accepts a JSON object only', () => {
    expect(parseBody('{"Id":"x"}')).toEqual({ ok: true, parsed: { Id: 'x' } });
    expect(parseBody('<html>maintenance</html>')).toMatchObject({ ok: false, problem: expect.stringContaining('not JSON') });
    expect(parseBody('{"Id":"x"')).toMatchObject({ ok: false });
    expect(parseBody('[1]')).toMatchObject({ ok: false, problem: expect.stringContaining('array') });
    expect(parseBody('null')).toMatchObject({ ok: false, problem: expect.stringContaining('null') });
  });
});
