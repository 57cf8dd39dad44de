import { ApiAuthError, ApiRejectedError, ApiUnavailableError } from '../billing-api/api-errors.js';
import type { ResourceType } from '../billing-api/resource-types.js';

/** What the enricher needs of the billing API: the current state of one resource (BillingApiClient fits). */
export interface ResourceReader {
  getResource(type: ResourceType, id: string): Promise<{ kind: 'found'; body: string } | { kind: 'gone' }>;
  /** This instance's fraction (0..1] of the deployment's request budget (BillingApiClient.setRequestShare). Optional: a reader without a budget ignores it. */
  setRequestShare?(share: number): void;
}

/**
 * How a failed read affects the pipeline (docs/CONTRACT.md property 7):
 * - `unavailable`: the API is down, slow or rate-limiting: pause the partition, retry later,
 *   never DLQ;
 * - `credentials`: our credentials are refused (401 after renewal, 403): a configuration
 *   problem, so pause, report not-ready, never DLQ;
 * - `rejected`: the API refuses this one identifier (e.g. 400): DLQ that request, go on.
 * Anything else (a bug) is rethrown, so the batch is retried rather than dead-lettered.
 */
export type ReadFailure = 'unavailable' | 'credentials' | 'rejected';

export function classifyReadFailure(err: unknown): ReadFailure | undefined {
  if (err instanceof ApiAuthError) return 'credentials';
  if (err instanceof ApiRejectedError) return 'rejected';
  if (err instanceof ApiUnavailableError) return 'unavailable';
  return undefined;
}

/** The wait the service asked for, if it said (Retry-After beyond what the client waits in-process). */
export function requestedWaitMs(err: unknown): number | undefined {
  return err instanceof ApiUnavailableError ? err.retryAfterMs : undefined;
}
