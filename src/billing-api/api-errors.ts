import { LoaderError, type ErrorContext } from '../errors.js';

/**
 * The errors the billing API client throws. Each says what its caller (the enricher, the
 * backfill) must do, so the decision is made here, once, from the HTTP status table
 * (`classifyHttpStatus`), and not re-derived from status codes by every caller.
 *
 * | class                | retriable | meaning                                   | enricher                          |
 * |----------------------|-----------|-------------------------------------------|-----------------------------------|
 * | ApiUnavailableError  | yes       | 5xx, 408, 429, timeout, connection error, | pause the partition, try later;   |
 * |                      |           | after the client's own bounded retries    | never the DLQ                     |
 * | ApiAuthError         | no        | credentials refused, 401 after a renewal, | pause, report not-ready with the  |
 * |                      |           | 403: a configuration problem              | reason; never the DLQ             |
 * | ApiRejectedError     | no        | 400, 422... for one identifier, or an     | the record goes to the DLQ with   |
 * |                      |           | identifier that cannot be requested       | the reason; the pipeline goes on  |
 *
 * Messages never contain a token, a secret or a password.
 */

/**
 * The billing service cannot answer now (5xx, 408, 429, timeouts, connection errors) and the
 * client's bounded retries ran out, or the service asked for a wait longer than the client
 * waits in-process. Retriable: pause and try again later; the record is not at fault.
 */
export class ApiUnavailableError extends LoaderError {
  /** How long the service asked to wait (Retry-After), in milliseconds, when it said so. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: { cause?: unknown; context?: ErrorContext; retryAfterMs?: number } = {}) {
    super(message, { retriable: true, cause: options.cause, context: options.context });
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * The service refuses the loader's credentials: the token endpoint rejected them (400/401,
 * e.g. invalid_client, invalid_grant), a 401 survived a token renewal, or a 403. A
 * configuration problem, not a bad record: not retriable by the client; the enricher pauses,
 * reports not-ready with this message, and never routes records to the DLQ for it.
 */
export class ApiAuthError extends LoaderError {
  constructor(message: string, options: { cause?: unknown; context?: ErrorContext } = {}) {
    super(message, { retriable: false, ...options });
  }
}

/**
 * The service rejected the request for this one identifier (400, 422 and other 4xx that are
 * not 401/403/404/408/410/429), or the identifier cannot be requested at all (empty, not valid
 * Unicode, too long). Belongs to the record that named it: the enricher sends that record to
 * the DLQ with this reason and goes on.
 */
export class ApiRejectedError extends LoaderError {
  constructor(message: string, options: { cause?: unknown; context?: ErrorContext } = {}) {
    super(message, { retriable: false, ...options });
  }
}

/**
 * One attempt failed in a way another attempt may fix (5xx, 408, 429, timeout, connection
 * error, a malformed 2xx body, a 401 before the renewal). Internal to the client's retry loop:
 * callers only ever see ApiUnavailableError once the attempts run out.
 */
export class TransientApiError extends LoaderError {
  /** Wait before the next attempt, in milliseconds, when the service said (Retry-After) or the client knows (0 after a token renewal). */
  readonly retryAfterMs: number | undefined;
  /** Metric label of the retry: rate-limited, server-error, transport, malformed, unauthorized. */
  readonly reason: string;

  constructor(message: string, options: { reason: string; cause?: unknown; context?: ErrorContext; retryAfterMs?: number }) {
    super(message, { retriable: true, cause: options.cause, context: options.context });
    this.reason = options.reason;
    this.retryAfterMs = options.retryAfterMs;
  }
}
