import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import type { ResourceType } from '../billing-api/resource-types.js';
import { decodeFetchRequest, encodeFetchRequest, type FetchRequest } from '../wire/fetch-request.js';
import type { StoredHead } from './head-store.js';
import { groupRequests, holdBackTooLarge, planPart, type Pending, type ReadResult } from './part-plan.js';
import type { RetryRules } from './read-decision.js';

const rules: RetryRules = { notFoundWindowMs: 300_000, goneConfirmMs: 10_000, unreadableAttempts: 3, baseDelayMs: 1000, maxDelayMs: 60_000 };
const source = { topic: 'p.enricher.requests', partition: 2, dlqTopic: 'p.webhooks.dlq' };
let offset = 0;

function pending(type: ResourceType, id: string, extra: Partial<FetchRequest> = {}): Pending {
  const request: FetchRequest = { type, id, eventId: `e-${offset}`, event: 'ContractChanged', receivedAt: 1000, source: { topic: 'p.webhooks', partition: 0, offset: String(offset) }, ...extra };
  const encoded = encodeFetchRequest(request);
  const message = { key: Buffer.from(encoded.key), value: encoded.value, offset: String(offset++), timestamp: '0', attributes: 0, headers: {} } as KafkaMessage;
  return { request, message };
}

const found = (body: Record<string, unknown>, fetchedAt = 5000, hash = JSON.stringify(body)): ReadResult => ({ kind: 'found', body: JSON.stringify(body), parsed: body, hash, fetchedAt });
const head = (h: Partial<StoredHead> = {}): StoredHead => ({ version: 1, contentHash: 'h1', deleted: false, fetchedAt: 4000, ...h });

function plan(groups: [string, Pending[]][], results: ReadResult[], heads: Record<string, StoredHead> = {}, decidedAt = 6000, readEscalationSettings = true) {
  return planPart({ groups, results, heads: new Map(Object.entries(heads)), rules, decidedAt, source, readEscalationSettings });
}

const followUps = (p: ReturnType<typeof plan>) => p.followUps.map((m) => decodeFetchRequest(m.value as Buffer)).map((r) => `${r.type}:${r.id}`);

describe('groupRequests', () => {
  it('groups a part by resource in order of first appearance; a record that is no request is a dead letter', () => {
    const a1 = pending('Invoice', 'a');
    const b = pending('Invoice', 'b');
    const a2 = pending('Invoice', 'a');
    const junk = { ...a1.message, value: Buffer.from('not json'), offset: '99' };
    const { groups, letters } = groupRequests([a1.message, b.message, junk, a2.message], source);
    expect(groups.map(([k, ps]) => [k, ps.length])).toEqual([['Invoice:a', 2], ['Invoice:b', 1]]);
    expect(letters).toMatchObject([{ dlqTopic: source.dlqTopic, sourceTopic: source.topic, sourcePartition: 2, sourceOffset: '99', errorClass: 'invalid-request' }]);
  });
});

describe('planPart', () => {
  it('coalesces the requests of a resource into one version that names every webhook, the earliest first', () => {
    const late = pending('Invoice', 'i', { eventId: 'late', event: 'InvoiceChanged', receivedAt: 2000 });
    const early = pending('Invoice', 'i', { eventId: 'early', event: 'InvoiceCreated', receivedAt: 1000 });
    const backfill = pending('Invoice', 'i', { eventId: null, event: null, receivedAt: 1500, source: null });
    const p = plan([['Invoice:i', [late, early, backfill]]], [found({ Id: 'i' })]);
    expect(p.snapshots).toHaveLength(1);
    expect(p.snapshots[0]?.value).toMatchObject({ resource_type: 'Invoice', resource_id: 'i', version: 1, deleted: false, fetched_at: 5000, source_event_ids: ['early', 'late'], source_events: ['InvoiceCreated', 'InvoiceChanged'] });
    expect(p.snapshots[0]?.value.sources.map((s) => s.offset)).toEqual([Number(early.request.source?.offset), Number(late.request.source?.offset)]);
    expect(p.coalesced).toBe(2);
    expect(p.heads.get('Invoice:i')).toMatchObject({ version: 1, fetchedAt: 5000 });
    expect(p.headRecords.map((r) => r.key)).toEqual(['Invoice:i']);
  });

  it('makes no version when the content equals the head', () => {
    const p = plan([['Invoice:i', [pending('Invoice', 'i')]]], [found({ Id: 'i' }, 5000, 'h1')], { 'Invoice:i': head() });
    expect(p.snapshots).toEqual([]);
    expect(p.headRecords).toEqual([]);
    expect(p.unchanged).toEqual(['Invoice']);
  });

  it("asks for a contract's customer when the contract first names it or names another one, not when a sibling request names it", () => {
    const body = { Id: 'c', CustomerId: 'k1' };
    expect(followUps(plan([['Contract:c', [pending('Contract', 'c')]]], [found(body)]))).toEqual(['Customer:k1']);
    expect(followUps(plan([['Contract:c', [pending('Contract', 'c')]]], [found(body)], { 'Contract:c': head({ customerId: 'k0' }) }))).toEqual(['Customer:k1']);
    expect(followUps(plan([['Contract:c', [pending('Contract', 'c')]]], [found(body)], { 'Contract:c': head({ customerId: 'k1' }) }))).toEqual([]);
    expect(followUps(plan([['Contract:c', [pending('Contract', 'c', { siblings: ['Customer:k1'] })]]], [found(body)]))).toEqual([]);
    expect(plan([['Contract:c', [pending('Contract', 'c')]]], [found(body)]).heads.get('Contract:c')?.customerId).toBe('k1');
  });

  it("on a reset asks for every remembered escalation process of the contract, even without a new version", () => {
    const reset = pending('Contract', 'c', { event: 'PaymentEscalationReset' });
    const p = plan([['Contract:c', [reset]]], [found({ Id: 'c' }, 5000, 'h1')], { 'Contract:c': head({ escalationProcessIds: ['p1', 'p2'] }) });
    expect(p.snapshots).toEqual([]);
    expect(followUps(p)).toEqual(['PaymentEscalationProcess:p1', 'PaymentEscalationProcess:p2']);
    // The processes are forgotten: the head is rewritten without them.
    expect(p.heads.get('Contract:c')?.escalationProcessIds).toEqual([]);
  });

  it('asks for no escalation process when escalation settings are not read (no path configured)', () => {
    const reset = pending('Contract', 'c', { event: 'PaymentEscalationReset' });
    const p = plan([['Contract:c', [reset]]], [found({ Id: 'c', PaymentEscalationProcessId: 'p3' }, 5000, 'h1')], { 'Contract:c': head({ escalationProcessIds: ['p1', 'p2'] }) }, 6000, false);
    expect(followUps(p)).toEqual([]);
  });

  it('a read skipped by the interval makes nothing: no version, no reread, no dead letter', () => {
    const p = plan([['PaymentEscalationProcess:p', [pending('PaymentEscalationProcess', 'p')]]], [{ kind: 'skipped' }]);
    expect(p).toMatchObject({ snapshots: [], delayed: [], letters: [], followUps: [], unchanged: ['PaymentEscalationProcess'] });
  });

  it('puts a resource to be read again on the delay topic, and gives up with dead letters when the rules say so', () => {
    const first = pending('Invoice', 'n');
    const retry = plan([['Invoice:n', [first]]], [{ kind: 'gone', fetchedAt: 5000 }]);
    expect(retry.snapshots).toEqual([]);
    expect(retry.rereads).toMatchObject([{ key: 'Invoice:n', type: 'Invoice', id: 'n', retry: { reason: 'not-found-yet', attempt: 1 } }]);
    expect(retry.delayed.map((m) => decodeFetchRequest(m.value as Buffer).retry?.reason)).toEqual(['not-found-yet']);
    expect(retry.letters).toEqual([]);

    const old = pending('Invoice', 'n', { retry: { reason: 'not-found-yet', attempt: 4, since: 0, dueAt: 400_000 } });
    const gaveUp = plan([['Invoice:n', [old]]], [{ kind: 'gone', fetchedAt: 400_000 }], {}, 400_000);
    expect(gaveUp.delayed).toEqual([]);
    expect(gaveUp.letters).toMatchObject([{ errorClass: 'not-found', sourceOffset: old.message.offset }]);
    expect(gaveUp.givenUp).toEqual([{ type: 'Invoice', reason: 'not-found', count: 1 }]);
  });

  it('dead-letters the requests of a read the API rejected', () => {
    const p = plan([['Invoice:r', [pending('Invoice', 'r'), pending('Invoice', 'r')]]], [{ kind: 'failed', failure: 'rejected', err: new Error('400 Bad Request') }]);
    expect(p.letters.map((l) => [l.errorClass, l.errorMessage])).toEqual([['rejected-by-api', '400 Bad Request'], ['rejected-by-api', '400 Bad Request']]);
    expect(p.snapshots).toEqual([]);
  });

  it('keeps valid_from growing with the version when the clock steps back', () => {
    const p = plan([['Invoice:i', [pending('Invoice', 'i')]]], [found({ Id: 'i', Total: 2 }, 3000)], { 'Invoice:i': head({ fetchedAt: 4000 }) });
    expect(p.snapshots[0]?.value).toMatchObject({ version: 2, fetched_at: 4001 });
  });
});

describe('holdBackTooLarge', () => {
  it('dead-letters the requests of a snapshot too large to publish and keeps its head back', () => {
    const big = [pending('Invoice', 'big'), pending('Invoice', 'big')];
    const small = [pending('Invoice', 'small')];
    const groups: [string, Pending[]][] = [['Invoice:big', big], ['Invoice:small', small]];
    const p = plan(groups, [found({ Id: 'big' }), found({ Id: 'small' })]);
    const { plan: held, unpublished } = holdBackTooLarge(p, groups, [{ key: 'Invoice:big', bytes: 2_000_000 }], { topic: 'p.snapshots', maxBytes: 1_048_588 }, source);
    expect([...unpublished]).toEqual(['Invoice:big']);
    expect([...held.heads.keys()]).toEqual(['Invoice:small']);
    expect(held.headRecords.map((r) => r.key)).toEqual(['Invoice:small']);
    expect(held.letters.map((l) => [l.errorClass, l.sourceOffset])).toEqual(big.map((b) => ['snapshot-too-large', b.message.offset]));
    expect(held.letters[0]?.errorMessage).toBe('snapshot of 2000000 bytes exceeds max.message.bytes 1048588 of p.snapshots');
  });
});
