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
