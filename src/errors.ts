/**
 * The one error model of the loader. Every error that crosses a module boundary is a
 * LoaderError: it says whether retrying can help (`retriable`), keeps its `cause`, and carries
 * typed context (where in Kafka, which resource) instead of identifiers baked into the message.
 */

export interface ErrorContext {
  topic?: string;
  partition?: number;
  offset?: string;
  resourceType?: string;
  resourceId?: string;
  status?: number;
  sqlState?: string;
  variable?: string;
}

export interface LoaderErrorOptions {
  retriable?: boolean;
  cause?: unknown;
  context?: ErrorContext;
}

export class LoaderError extends Error {
  readonly retriable: boolean;
  readonly context: ErrorContext;

  constructor(message: string, options: LoaderErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retriable = options.retriable ?? false;
    this.context = options.context ?? {};
  }
}

/** A mistake of the user's (arguments, configuration, environment): the CLI prints one line, no stack. */
export class UserError extends LoaderError {}

/** A configuration value is missing or malformed; the message names the variable and the fix. */
export class ConfigError extends UserError {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`, { context: { variable } });
  }
}

/** Retries ran out; `cause` is the last failure. */
export class RetriesExhaustedError extends LoaderError {
  readonly attempts: number;
  constructor(attempts: number, cause: unknown) {
    super(`gave up after ${attempts} attempts: ${errorMessage(cause)}`, { cause, retriable: false });
    this.attempts = attempts;
  }
}

/** Programmer errors are never retried and never routed to a DLQ as if the record were bad. */
export function isProgrammerError(err: unknown): boolean {
  return err instanceof TypeError || err instanceof ReferenceError || err instanceof SyntaxError || err instanceof RangeError;
}

export function isRetriable(err: unknown): boolean {
  if (err instanceof LoaderError) return err.retriable;
  if (isProgrammerError(err)) return false;
  // kafkajs marks its own errors; network errors from node carry a code.
  const e = err as { retriable?: unknown; code?: unknown } | null;
  if (e && typeof e.retriable === 'boolean') return e.retriable;
  return typeof e?.code === 'string' && NETWORK_ERROR_CODES.has(e.code);
}

const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
]);

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** How an HTTP status from the billing API is to be treated. One table, used by every caller. */
export type HttpDisposition = 'ok' | 'gone' | 'retry' | 'rate-limited' | 'unauthorized' | 'forbidden' | 'bad-request';

export function classifyHttpStatus(status: number): HttpDisposition {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 404 || status === 410) return 'gone';
  if (status === 429) return 'rate-limited';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'forbidden';
  if (status === 408 || status >= 500) return 'retry';
  return 'bad-request';
}

/**
 * Whether a PostgreSQL error (by SQLSTATE) can go away by itself: connection loss, shutdown,
 * serialization failures, deadlocks, resource exhaustion. Everything else is a bug or bad data.
 */
export function isRetriableSqlState(code: string | undefined): boolean {
  if (!code) return false;
  const cls = code.slice(0, 2);
  return cls === '08' || cls === '53' || cls === '57' || code === '40001' || code === '40P01' || code === '55P03';
}

/**
 * What a stage does with a failure while handling a record, one vocabulary for every stage:
 * - `transient`: the service is down or busy; retry the batch, the record is fine;
 * - `bad-record`: the record itself is refused; it goes to the DLQ and the stage moves on;
 * - `configuration`: the loader is pointed at the wrong place or lacks a migration or a grant;
 *   hold the batch (retry, readiness down) and never dead-letter, because every later record
 *   would fail the same way and emptying the topics into the DLQ would lose them from the warehouse.
 */
export type FailureKind = 'transient' | 'bad-record' | 'configuration';

/**
 * How a PostgreSQL failure is treated. Only data errors (SQLSTATE classes 22 and 23: a value the
 * database refuses) are the record's fault; a missing table (migrations not run) or permission is
 * configuration; outages (isRetriableSqlState, dropped sockets) are transient.
 */
export function classifyDatabaseError(err: unknown): FailureKind {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    if (isRetriableSqlState(code)) return 'transient';
    if (code.startsWith('22') || code.startsWith('23')) return 'bad-record';
    return 'configuration';
  }
  if (isRetriable(err)) return 'transient';
  if (DROPPED_SOCKET.test(errorMessage(err))) return 'transient';
  return 'configuration';
}

/** node-postgres reports a dropped or refused socket with a plain Error and no code. */
const DROPPED_SOCKET = /connection terminated|not queryable|connection timeout|timeout exceeded when trying to connect|Connection ended|ECONNREFUSED|ECONNRESET/i;

/**
 * Whether a PostgreSQL failure means the session's connection is gone or going (SQLSTATE class
 * 08 or 57, or a dropped socket), not one the session can go on after: its client is not to be
 * handed out again.
 */
export function isConnectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || code.startsWith('57');
  return DROPPED_SOCKET.test(errorMessage(err));
}

/**
 * How a failure to decode `value` through the schema registry is treated. The registry client
 * reports HTTP failures with `status`, and network failures too (mappersmith turns them into
 * status 400): those are transient. A 404 for the schema id of a well-framed value points at the
 * registry (a wrong SCHEMA_REGISTRY_URL, a wiped registry), not at the record: configuration.
 * A 404 of a value that is not even framed, and errors without a status (the framing check, the
 * Avro decoder), are the record's fault.
 */
export function classifyRegistryError(err: unknown, value: Buffer | null | undefined): FailureKind {
  if (value && unknownSchemaId(err, value) !== undefined) return 'configuration';
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === 'number') return status === 404 ? 'bad-record' : 'transient';
  if (isProgrammerError(err)) return 'bad-record';
  if (isRetriable(err)) return 'transient';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(E[A-Z]+|UND_ERR_.*)$/.test(code) ? 'transient' : 'bad-record';
}

/**
 * The schema id of a Confluent-framed value (magic byte 0, then the id) whose decoding failed
 * because the registry answered 404 for that id; undefined for any other failure.
 */
export function unknownSchemaId(err: unknown, value: Buffer): number | undefined {
  if ((err as { status?: unknown } | null)?.status !== 404) return undefined;
  if (value.length < 5 || value[0] !== 0) return undefined;
  return value.readInt32BE(1);
}

/**
 * The registry answered 404 for the schema id of a well-framed record: a configuration problem
 * (wrong SCHEMA_REGISTRY_URL, a wiped registry). Dead-lettering would empty the topics into the
 * DLQ with their offsets committed, so the batch is held and retried until the registry knows the id (the sink and the enricher's router).
 */
export class UnknownSchemaIdError extends LoaderError {
  constructor(
    readonly schemaId: number,
    cause: unknown,
    context: { topic: string; partition: number; offset: string },
  ) {
    super(`the schema registry does not know schema id ${schemaId} (a wrong SCHEMA_REGISTRY_URL or a wiped registry?); records held, nothing committed`, { retriable: true, cause, context });
  }
}
