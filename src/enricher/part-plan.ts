import type { KafkaMessage, Message } from 'kafkajs';
import { customerReference } from '../billing-api/customer-reference.js';
import { resourceKey } from '../billing-api/resource-types.js';
import { errorMessage } from '../errors.js';
import { deadLetterFor, type DeadLetter } from '../wire/dead-letter.js';
import { decodeFetchRequest, encodeFetchRequest, type FetchRequest, type RetryState } from '../wire/fetch-request.js';
import type { SnapshotRecord } from '../wire/snapshot-record.js';
import { escalationProcessesOf, sameIds } from './escalation-processes.js';
import { encodeHead, type StoredHead } from './head-store.js';
import { decideRead, type GiveUpReason, type ReadOutcome, type RetryRules } from './read-decision.js';
import type { ReadFailure } from './resource-reader.js';
import { nextVersion } from './versioning.js';

/** A request of the part, with the record it came in (its coordinates go into a dead letter). */
export interface Pending {
  request: FetchRequest;
  message: KafkaMessage;
}

/** What one read of a resource (or its prefetched body) gave. */
export type ReadResult =
  | { kind: 'found'; body: string; parsed: Record<string, unknown>; hash: string; fetchedAt: number }
  | { kind: 'gone'; fetchedAt: number }
  | { kind: 'unreadable'; problem: string; fetchedAt: number }
  | { kind: 'failed'; failure: ReadFailure; err: unknown }
  /** Not read: the resource was read within its read interval (escalation settings); its requests are answered by that read. */
  | { kind: 'skipped' };

/** Where the part was read from, and where its dead letters go. */
export interface PartSource {
  topic: string;
  partition: number;
  dlqTopic: string;
}

/** The requests of a part grouped by resource, in the order each resource first appears; a record that is no request is a dead letter. */
export function groupRequests(messages: KafkaMessage[], source: PartSource): { groups: [string, Pending[]][]; letters: DeadLetter[] } {
  const letters: DeadLetter[] = [];
  const byResource = new Map<string, Pending[]>();
  for (const message of messages) {
    try {
      const request = decodeFetchRequest(message.value);
      const key = resourceKey(request.type, request.id);
      byResource.set(key, [...(byResource.get(key) ?? []), { request, message }]);
    } catch (err) {
      letters.push(deadLetterFor(source.dlqTopic, source.topic, source.partition, message, 'invalid-request', errorMessage(err)));
    }
  }
  return { groups: [...byResource.entries()], letters };
}

/** Everything one part publishes in its transaction, and what it means for metrics and logs. */
export interface PartPlan {
  snapshots: { key: string; value: SnapshotRecord }[];
  /** The heads after the part, by resource key; each also stands in headRecords. */
  heads: Map<string, StoredHead>;
  headRecords: Message[];
  /** Requests for other resources (a contract's customer, escalation processes). */
  followUps: Message[];
  /** Requests to read again later, for the delay topic. */
  delayed: Message[];
  letters: DeadLetter[];
  givenUp: { type: string; reason: GiveUpReason; count: number }[];
  /** Resources to be read again later: their webhooks are not yet answered (no freshness sample). */
  rereads: { key: string; type: string; id: string; retry: RetryState }[];
  /** Requests answered by a read made for another request of the same resource. */
  coalesced: number;
  /** Types of the resources read with the content of their head (no version). */
  unchanged: string[];
  versions: { type: string; deleted: boolean }[];
}

export interface PartInput {
  groups: [string, Pending[]][];
  /** The read of each group, in the same order. */
  results: ReadResult[];
  /** The partition's heads before the part. */
  heads: ReadonlyMap<string, StoredHead>;
  rules: RetryRules;
  /** When the reads were judged (retry due times count from it). */
  decidedAt: number;
  source: PartSource;
  /** Escalation settings are read (a path is configured): a contract's reads may ask for them. Default false. */
  readEscalationSettings?: boolean;
}

/**
 * What a part's reads make: versions, heads, follow-up requests, rereads and dead letters.
 * Pure: no Kafka, no registry, no clock but `decidedAt` and the reads' own fetch times.
 */
export function planPart(input: PartInput): PartPlan {
  const { groups, results, heads, rules, decidedAt, source, readEscalationSettings = false } = input;
  const plan: PartPlan = { snapshots: [], heads: new Map(), headRecords: [], followUps: [], delayed: [], letters: [], givenUp: [], rereads: [], coalesced: 0, unchanged: [], versions: [] };
  const letter = (p: Pending, errorClass: string, text: string) => plan.letters.push(deadLetterFor(source.dlqTopic, source.topic, source.partition, p.message, errorClass, text));
  groups.forEach(([key, pending], i) => {
    const result = results[i] as ReadResult;
    const first = (pending[0] as Pending).request;
    plan.coalesced += pending.length - 1;
    if (result.kind === 'failed') {
      for (const p of pending) letter(p, 'rejected-by-api', errorMessage(result.err));
      return;
    }
    if (result.kind === 'skipped') {
      plan.unchanged.push(first.type);
      return;
    }
    const head = plan.heads.get(key) ?? heads.get(key);
    const outcome: ReadOutcome = result.kind === 'found' ? { kind: 'found', contentHash: result.hash } : result.kind === 'gone' ? { kind: 'gone' } : { kind: 'unreadable', problem: result.problem };
    const decision = decideRead(head, outcome, pending.map((p) => p.request.retry), decidedAt, rules);
    if (decision.action === 'retry') {
      // Every request goes on, so the version that ends the wait still names all their webhooks.
      for (const p of pending) plan.delayed.push(encodeFetchRequest({ ...p.request, prefetched: undefined, retry: decision.retry }));
      plan.rereads.push({ key, type: first.type, id: first.id, retry: decision.retry });
      return;
    }
    if (decision.action === 'give-up') {
      for (const p of pending) letter(p, decision.reason, `${first.type} ${first.id}: ${decision.detail}`);
      plan.givenUp.push({ type: first.type, reason: decision.reason, count: pending.length });
      return;
    }
    const next = nextVersion(head, decision.outcome);
    // A contract's customer is read when the contract first names it (spec 2: the contract
    // references its customer, which a client reads after the contract): on its first version,
    // after a deletion, or when the reference changed. Not when a webhook behind this read
    // named that very customer: it is fetched for that webhook anyway.
    const customerId = next && result.kind === 'found' && first.type === 'Contract' ? customerReference(result.parsed) : undefined;
    if (customerId !== undefined && (head === undefined || head.deleted || head.customerId !== customerId)) {
      const customerKey = resourceKey('Customer', customerId);
      if (!pending.some((p) => p.request.siblings?.includes(customerKey))) plan.followUps.push(encodeFetchRequest({ ...first, type: 'Customer', id: customerId, prefetched: undefined, siblings: undefined, retry: undefined }));
    }
    const processes = readEscalationSettings && result.kind === 'found' && first.type === 'Contract' ? escalationProcessesOf(pending.map((p) => p.request), result.parsed, head?.escalationProcessIds) : undefined;
    for (const id of processes?.reread ?? []) plan.followUps.push(encodeFetchRequest({ ...(processes?.cause ?? first), type: 'PaymentEscalationProcess', id, prefetched: undefined, siblings: undefined, retry: undefined }));
    if (!next) {
      plan.unchanged.push(first.type);
      // No version, but the contract's processes may be news: its head remembers them anyway.
      if (head && processes && !sameIds(processes.remember, head.escalationProcessIds)) {
        const stored: StoredHead = { ...head, escalationProcessIds: processes.remember };
        plan.heads.set(key, stored);
        plan.headRecords.push({ key, value: encodeHead(stored) });
      }
      return;
    }
    // valid_from must grow with the version even if the wall clock steps back.
    const fetchedAt = Math.max(result.fetchedAt, (head?.fetchedAt ?? 0) + 1);
    const stored: StoredHead = { ...next, fetchedAt, ...(customerId !== undefined ? { customerId } : {}), ...(processes && processes.remember.length > 0 ? { escalationProcessIds: processes.remember } : {}) };
    plan.heads.set(key, stored);
    const requests = pending.map((p) => p.request).sort((a, b) => a.receivedAt - b.receivedAt);
    const withEvent = requests.filter((r) => r.eventId !== null);
    plan.snapshots.push({
      key,
      value: {
        resource_type: first.type,
        resource_id: first.id,
        version: next.version,
        fetched_at: fetchedAt,
        deleted: next.deleted,
        content_hash: next.contentHash,
        body: result.kind === 'found' ? result.body : null,
        source_event_ids: withEvent.map((r) => r.eventId as string),
        source_events: withEvent.map((r) => r.event ?? ''),
        sources: requests.flatMap((r) => (r.source ? [{ topic: r.source.topic, partition: r.source.partition, offset: Number(r.source.offset) }] : [])),
      },
    });
    plan.headRecords.push({ key, value: encodeHead(stored) });
    plan.versions.push({ type: first.type, deleted: next.deleted });
  });
  return plan;
}

/**
 * A snapshot larger than the broker accepts can never be published: its requests go to the DLQ
 * and its head stays, so a later, smaller state is versioned as usual. MESSAGE_TOO_LARGE is not
 * retriable; sent, it would have failed the part again and again. Returns the plan without
 * those versions' heads, and the keys left unpublished.
 */
export function holdBackTooLarge(plan: PartPlan, groups: [string, Pending[]][], tooLarge: { key: string; bytes: number }[], limit: { topic: string; maxBytes: number }, source: PartSource): { plan: PartPlan; unpublished: Set<string> } {
  const unpublished = new Set(tooLarge.map((m) => m.key));
  if (unpublished.size === 0) return { plan, unpublished };
  const byResource = new Map(groups);
  const letters = [...plan.letters];
  for (const m of tooLarge) {
    for (const p of byResource.get(m.key) ?? []) letters.push(deadLetterFor(source.dlqTopic, source.topic, source.partition, p.message, 'snapshot-too-large', `snapshot of ${m.bytes} bytes exceeds max.message.bytes ${limit.maxBytes} of ${limit.topic}`));
  }
  return {
    plan: { ...plan, heads: new Map([...plan.heads].filter(([key]) => !unpublished.has(key))), headRecords: plan.headRecords.filter((r) => !unpublished.has(r.key as string)), letters },
    unpublished,
  };
}
