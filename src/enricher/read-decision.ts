import type { FetchRequest, RetryState } from '../wire/fetch-request.js';
import type { StoredHead } from './head-store.js';
import type { FetchOutcome, Head } from './versioning.js';

/** What one read of a resource gave, before any decision: a parsed object, a 404, or a 2xx the loader cannot read. */
export type ReadOutcome = { kind: 'found'; contentHash: string } | { kind: 'gone' } | { kind: 'unreadable'; problem: string };

/** How long and how often a resource is read again before an answer is believed or given up (src/config.ts). */
export interface RetryRules {
  /** How long a 404 of a resource never seen is read again before it is given up. */
  notFoundWindowMs: number;
  /** The wait before the second read that confirms a 404 of a resource that has versions. */
  goneConfirmMs: number;
  /** Reads of a body that is not a JSON object before it is given up. */
  unreadableAttempts: number;
  /** First wait between reads; doubles per attempt up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export type GiveUpReason = 'not-found' | 'unreadable-body';

export type ReadDecision =
  /** Version this outcome (nextVersion decides whether it makes one). */
  | { action: 'apply'; outcome: FetchOutcome }
  /** Read the resource again at retry.dueAt, through the delay topic. */
  | { action: 'retry'; retry: RetryState }
  /** Stop reading: a dead letter with the reason, no version. */
  | { action: 'give-up'; reason: GiveUpReason; detail: string };

export const delayMs = (attempt: number, rules: Pick<RetryRules, 'baseDelayMs' | 'maxDelayMs'>): number => Math.min(rules.maxDelayMs, rules.baseDelayMs * 2 ** Math.max(0, attempt - 1));

/**
 * What a read means, given the head and the requests it answers (their retry states: undefined
 * for a request straight from a webhook or the backfill):
 * - a JSON object: versioned;
 * - a body that is not a JSON object (a maintenance page, a truncated body): read again with
 *   backoff, given up after `unreadableAttempts` reads;
 * - a 404 of a resource never seen: read-after-write lag is normal right after a creation, so it
 *   is read again with backoff until `notFoundWindowMs` after the first 404 of the chain, then
 *   given up (a forged id ends there, with no version). A request fresh from a webhook starts a
 *   new window: a new event says the resource should exist now;
 * - a 404 of a resource whose latest version exists: believed only when a read at least
 *   `goneConfirmMs` later, with no version in between, says 404 again; one flaky answer then
 *   writes neither a deletion nor a resurrection;
 * - a 404 of a deleted resource: nothing new (nextVersion).
 */
export function decideRead(head: Head | undefined, outcome: ReadOutcome, retries: readonly (RetryState | undefined)[], now: number, rules: RetryRules): ReadDecision {
  if (outcome.kind === 'found') return { action: 'apply', outcome };
  if (outcome.kind === 'unreadable') {
    const attempt = Math.max(0, ...retries.map((r) => (r?.reason === 'unreadable' ? r.attempt : 0))) + 1;
    if (attempt >= rules.unreadableAttempts) return { action: 'give-up', reason: 'unreadable-body', detail: `${outcome.problem} (${attempt} reads)` };
    return { action: 'retry', retry: { reason: 'unreadable', attempt, since: earliestSince(retries, 'unreadable', now), dueAt: now + delayMs(attempt, rules) } };
  }
  if (head?.deleted) return { action: 'apply', outcome };
  if (head) {
    const confirmed = retries.some((r) => r?.reason === 'gone-unconfirmed' && r.headVersion === head.version);
    if (confirmed) return { action: 'apply', outcome };
    return { action: 'retry', retry: { reason: 'gone-unconfirmed', attempt: 1, since: now, dueAt: now + rules.goneConfirmMs, headVersion: head.version } };
  }
  const fresh = retries.length === 0 || retries.some((r) => r?.reason !== 'not-found-yet');
  const since = fresh ? now : earliestSince(retries, 'not-found-yet', now);
  const attempt = fresh ? 1 : Math.max(...retries.map((r) => r?.attempt ?? 0)) + 1;
  const end = since + rules.notFoundWindowMs;
  if (now >= end) return { action: 'give-up', reason: 'not-found', detail: `404 Not Found on every read for ${Math.round((now - since) / 1000)} s (${attempt} reads); never seen before` };
  // The last read falls on the window's end, so the give-up comes as soon as it is due.
  return { action: 'retry', retry: { reason: 'not-found-yet', attempt, since, dueAt: Math.min(end, now + delayMs(attempt, rules)) } };
}

function earliestSince(retries: readonly (RetryState | undefined)[], reason: RetryState['reason'], now: number): number {
  return Math.min(now, ...retries.flatMap((r) => (r?.reason === reason ? [r.since] : [])));
}

/**
 * The body of a list page (backfill) to version without a read, if any. Only for a resource
 * with no head: a page may be older than the head (the page was read, then a webhook's read saw
 * a newer state), and versioning it would put an older state after a newer one. With a head,
 * the page is only a source of ids: the fetcher reads the resource. Every request must be a
 * backfill one, since a webhook's request needs a read that starts after it was received.
 */
export function usablePrefetched(requests: readonly FetchRequest[], head: StoredHead | undefined): FetchRequest['prefetched'] {
  if (head !== undefined || requests.length === 0 || !requests.every((r) => r.prefetched && !r.retry)) return undefined;
  return requests.reduce((a, b) => ((b.prefetched?.fetchedAt ?? 0) > (a.prefetched?.fetchedAt ?? 0) ? b : a)).prefetched;
}

/** A body the versioning path can use: a JSON object (anything else is an answer the loader cannot read). */
export function parseBody(body: string): { ok: true; parsed: Record<string, unknown> } | { ok: false; problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (err) {
    return { ok: false, problem: `2xx body is not JSON (${err instanceof Error ? err.message : String(err)}; ${body.length} bytes, starts ${JSON.stringify(body.slice(0, 40))})` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: false, problem: `2xx body is JSON but not an object (${parsed === null ? 'null' : Array.isArray(parsed) ? 'array' : typeof parsed})` };
  return { ok: true, parsed: parsed as Record<string, unknown> };
}
