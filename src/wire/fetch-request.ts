import { isResourceType, resourceKey, type ResourceType } from '../billing-api/resource-types.js';
import { assertReadable, type FormatFields } from './record-format.js';

/**
 * A request to fetch one resource, on the internal topic `<prefix>.enricher.requests`, keyed
 * `<ResourceType>:<id>` so that every request for a resource reaches the one consumer that owns
 * it. JSON, not Avro: the topic is internal, written and read only by the enricher. It carries a
 * format number, and a reader reads newer formats that declare it enough (record-format.ts), so the
 * old and new enrichers of a rolling upgrade or a rollback read each other's requests.
 */
export interface FetchRequest {
  type: ResourceType;
  id: string;
  /** The webhook behind the request; null for backfill and follow-ups of backfill. */
  eventId: string | null;
  event: string | null;
  /** When the webhook was received (ms); a fetch that starts later is fresh for it. */
  receivedAt: number;
  source: { topic: string; partition: number; offset: string } | null;
  /** Keys of the other resources the same webhook named (a contract's customer follow-up is skipped when one of them is it). */
  siblings?: string[];
  /** A body already read from a list endpoint (backfill), with the time its page request started: versioned without a read only for a resource with no version yet. */
  prefetched?: { body: string; fetchedAt: number };
  /** Set on a request the fetcher wrote to the delay topic: why the resource is read again, and when. */
  retry?: RetryState;
}

/** A resource to read again later (read-decision.ts): the reason, how many reads gave it, since when, and when it is due. */
export interface RetryState {
  reason: 'not-found-yet' | 'gone-unconfirmed' | 'unreadable';
  attempt: number;
  since: number;
  dueAt: number;
  /** gone-unconfirmed: the version the first 404 contradicted (a version in between restarts the confirmation). */
  headVersion?: number;
}

const RETRY_REASONS: readonly string[] = ['not-found-yet', 'gone-unconfirmed', 'unreadable'];

function decodeRetry(r: unknown): RetryState | undefined {
  if (!r || typeof r !== 'object') return undefined;
  const { reason, attempt, since, dueAt, headVersion } = r as Partial<RetryState>;
  if (typeof reason !== 'string' || !RETRY_REASONS.includes(reason) || typeof attempt !== 'number' || typeof since !== 'number' || typeof dueAt !== 'number') return undefined;
  return { reason, attempt, since, dueAt, ...(typeof headVersion === 'number' ? { headVersion } : {}) };
}

const FORMAT = 1;

export function encodeFetchRequest(r: FetchRequest): { key: string; value: Buffer } {
  return { key: resourceKey(r.type, r.id), value: Buffer.from(JSON.stringify({ v: FORMAT, ...r })) };
}

/**
 * Parses a request of this format or of a newer one readable by it (record-format.ts), keeping the
 * fields this format knows; throws on anything else (it goes to the DLQ).
 */
export function decodeFetchRequest(value: Buffer | null): FetchRequest {
  if (!value) throw new Error('empty fetch request');
  const r = JSON.parse(value.toString('utf8')) as Partial<FetchRequest> & FormatFields;
  assertReadable(r, FORMAT, 'fetch request');
  if (typeof r.type !== 'string' || !isResourceType(r.type) || typeof r.id !== 'string' || r.id === '' || typeof r.receivedAt !== 'number') {
    throw new Error('fetch request without a valid type, id and receivedAt');
  }
  return {
    type: r.type,
    id: r.id,
    eventId: r.eventId ?? null,
    event: r.event ?? null,
    receivedAt: r.receivedAt,
    source: r.source ? { topic: r.source.topic, partition: r.source.partition, offset: r.source.offset } : null,
    ...(Array.isArray(r.siblings) ? { siblings: r.siblings.filter((k): k is string => typeof k === 'string') } : {}),
    ...(r.prefetched ? { prefetched: { body: r.prefetched.body, fetchedAt: r.prefetched.fetchedAt } } : {}),
    ...(decodeRetry(r.retry) ? { retry: decodeRetry(r.retry) as RetryState } : {}),
  };
}
