import { customerReference } from '../billing-api/customer-reference.js';
import { LoaderError } from '../errors.js';

/** Where a record came from; kept on every row and every dead letter. */
export interface Coordinates {
  topic: string;
  partition: number;
  offset: string;
}

/** One resource version as the sink writes it (schemas/resource-snapshot.avsc, checked). */
export interface SnapshotRow {
  resourceType: string;
  resourceId: string;
  version: number;
  fetchedAtMs: number;
  deleted: boolean;
  body: string | null;
  contentHash: string;
  sourceEventIds: string[];
  sourceEvents: string[];
  customerId: string | null;
  coordinates: Coordinates;
}

/** One webhook delivery (the fields of schemas/webhook.avsc the sink stores). */
export interface WebhookRow {
  eventId: string;
  event: string;
  receivedAtMs: number;
  body: string;
  /** The payload's EntityId; null when absent, also in records older than the field. */
  entityId: string | null;
  /** The delivery's X-Retry-Count; null when absent, also in records older than the field. */
  retryCount: number | null;
  coordinates: Coordinates;
}

/**
 * A record that decodes but breaks the contract: it goes to the DLQ with `errorClass`, never
 * retried (retrying cannot make it valid).
 */
export class InvalidRecordError extends LoaderError {
  readonly errorClass: string;
  constructor(message: string, errorClass = 'invalid-record') {
    super(message, { retriable: false });
    this.errorClass = errorClass;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** PostgreSQL text cannot hold NUL; a string with one would fail the whole batch's COPY. */
const NUL = '\u0000';

function need<T>(ok: boolean, value: T, what: string): T {
  if (!ok) throw new InvalidRecordError(what);
  return value;
}

function text(v: unknown, field: string, maxLength = 1024): string {
  need(typeof v === 'string' && v.length > 0 && v.length <= maxLength && !v.includes(NUL), v, `${field} must be a non-empty string of at most ${maxLength} characters without NUL`);
  return v as string;
}

/** timestamp-millis decodes as a number of ms; a reader registered with logical types may give a Date. */
function millis(v: unknown, field: string): number {
  const ms = v instanceof Date ? v.getTime() : v;
  // ±8.64e15 ms is the range of a JavaScript Date (and well inside PostgreSQL's timestamptz).
  return need(typeof ms === 'number' && Number.isInteger(ms) && Math.abs(ms) <= 8.64e15, ms as number, `${field} must be a timestamp in milliseconds`);
}

export function toSnapshotRow(value: unknown, coordinates: Coordinates): SnapshotRow {
  if (typeof value !== 'object' || value === null) throw new InvalidRecordError('snapshot value is not a record');
  const v = value as Record<string, unknown>;
  const resourceType = text(v.resource_type, 'resource_type', 128);
  const resourceId = text(v.resource_id, 'resource_id');
  const version = need(typeof v.version === 'number' && Number.isInteger(v.version) && v.version >= 1, v.version as number, 'version must be an integer >= 1');
  const fetchedAtMs = millis(v.fetched_at, 'fetched_at');
  const deleted = need(typeof v.deleted === 'boolean', v.deleted as boolean, 'deleted must be a boolean');
  const body = v.body ?? null;
  if (deleted && body !== null) throw new InvalidRecordError('a deleted version must have a null body');
  if (!deleted && (typeof body !== 'string' || body.includes(NUL))) throw new InvalidRecordError('body must be the JSON text of the resource unless deleted');
  const contentHash = text(v.content_hash, 'content_hash', 256);
  const sourceEventIds = stringArray(v.source_event_ids, 'source_event_ids');
  const sourceEvents = stringArray(v.source_events, 'source_events');
  for (const id of sourceEventIds) if (!UUID.test(id)) throw new InvalidRecordError(`source_event_ids holds '${id.slice(0, 64)}', not a UUID`);
  if (sourceEvents.length !== sourceEventIds.length) throw new InvalidRecordError('source_events must be parallel to source_event_ids');
  return {
    resourceType,
    resourceId,
    version,
    fetchedAtMs,
    deleted,
    body: body as string | null,
    contentHash,
    sourceEventIds,
    sourceEvents,
    customerId: resourceType === 'Contract' && typeof body === 'string' ? customerIdOf(body) : null,
    coordinates,
  };
}

function stringArray(v: unknown, field: string): string[] {
  const list = v ?? [];
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string' && !s.includes(NUL))) throw new InvalidRecordError(`${field} must be an array of strings`);
  return list as string[];
}

/**
 * The contract's customer reference: the top-level `CustomerId` property, its name matched in
 * any letter case (spec 9.3). Contracts are parsed here anyway, so a body that is not JSON is
 * caught before it reaches the database.
 */
export function customerIdOf(body: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new InvalidRecordError('body is not valid JSON');
  }
  const id = customerReference(parsed);
  // PostgreSQL text cannot hold NUL: such a reference is not stored (the body keeps it).
  return id === undefined || id.includes(NUL) ? null : id;
}

export function toWebhookRow(value: unknown, coordinates: Coordinates): WebhookRow {
  if (typeof value !== 'object' || value === null) throw new InvalidRecordError('webhook value is not a record');
  const v = value as Record<string, unknown>;
  const eventId = need(typeof v.event_id === 'string' && UUID.test(v.event_id), v.event_id as string, 'event_id must be a UUID');
  const event = need(typeof v.event === 'string' && !v.event.includes(NUL), v.event as string, 'event must be a string');
  const receivedAtMs = millis(v.received_at, 'received_at');
  const body = need(typeof v.body === 'string' && !v.body.includes(NUL), v.body as string, 'body must be the JSON text received');
  // Optional with a null default in the schema: a record written before they existed has neither.
  const entityId = typeof v.entity_id === 'string' && !v.entity_id.includes(NUL) ? v.entity_id : null;
  const retryCount = typeof v.retry_count === 'number' && Number.isSafeInteger(v.retry_count) ? v.retry_count : null;
  return { eventId, event, receivedAtMs, body, entityId, retryCount, coordinates };
}
