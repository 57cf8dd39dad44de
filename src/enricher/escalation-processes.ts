import { resourceKey } from '../billing-api/resource-types.js';
import type { FetchRequest } from '../wire/fetch-request.js';

/** A contract remembers at most this many processes: enough for any real escalation history, and a head stays small. */
const MAX_REMEMBERED = 16;

const PROCESS_KEY_PREFIX = resourceKey('PaymentEscalationProcess', '');

/**
 * Which payment escalation processes a contract's read implies. PaymentEscalationReset names the
 * contract and the customer but not the process (spec 6.2), and the reset changes the process,
 * so the contract's owner remembers the processes of the contract, from the requests of
 * PaymentEscalated (their `siblings` name the process) and from the contract's body (its
 * PaymentEscalationProcessId, in any letter case), and on a reset asks for each to be read again.
 * The memory lives in the contract's head (the contract's partition); the reads are follow-up
 * requests keyed by process, so each process is still versioned by its own owner only. After a
 * reset the processes are forgotten: a later escalation starts a new one.
 */
export function escalationProcessesOf(requests: readonly FetchRequest[], body: Record<string, unknown> | undefined, remembered: readonly string[] = []): { remember: string[]; reread: string[]; cause?: FetchRequest } {
  const named = requests.flatMap((r) => (r.siblings ?? []).filter((k) => k.startsWith(PROCESS_KEY_PREFIX)).map((k) => k.slice(PROCESS_KEY_PREFIX.length)));
  const current = body ? processIdOf(body) : undefined;
  const all = unique([...remembered, ...named, ...(current ? [current] : [])]).filter((id) => id !== '');
  // The rereads name the reset as their source, even when other webhooks share the contract's read.
  const reset = requests.find((r) => r.event === 'PaymentEscalationReset');
  if (reset) return { remember: current ? [current] : [], reread: all, cause: reset };
  return { remember: all.slice(-MAX_REMEMBERED), reread: [] };
}

function processIdOf(body: Record<string, unknown>): string | undefined {
  for (const [k, v] of Object.entries(body)) if (k.toLowerCase() === 'paymentescalationprocessid' && typeof v === 'string' && v !== '') return v;
  return undefined;
}

const unique = (ids: string[]): string[] => [...new Set(ids)];

export const sameIds = (a: readonly string[] = [], b: readonly string[] = []): boolean => a.length === b.length && a.every((id, i) => id === b[i]);
