import type { ScenarioTruth } from './warehouse-truth.js';

/**
 * The metric definitions of docs/WAREHOUSE.md#metric-views computed from the sandbox's truth (the
 * bodies and events the simulator held), not from the warehouse: what the metric views must
 * answer. Keys are looked up in any letter case, dates read as the service writes them (7
 * fraction digits, date-only values as UTC dates). `now` is the moment the views were asked at.
 */

type Body = Record<string, unknown>;

/** A body's key in any letter case. */
export function field(body: unknown, key: string): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const want = key.toLowerCase();
  for (const [k, v] of Object.entries(body as Body)) if (k.toLowerCase() === want) return v;
  return undefined;
}

export function date(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value.replace(/(\.\d{3})\d+/, '$1');
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : d;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null);
export const utcDay = (d: Date): string => d.toISOString().slice(0, 10);

export interface Phase {
  n: number;
  type: string | null;
  start: Date | null;
  plan: string | null;
}

export interface Lifecycle {
  id: string;
  planId: string | null;
  start: Date;
  end: Date | null;
  phases: Phase[];
  trialStart: Date | null;
  trialEnd: Date | null;
  convertedAt: Date | null;
  payingFrom: Date | null;
  endedAt: Date | null;
  endKind: 'churn' | 'trial_not_converted' | null;
  trialOutcome: 'converted' | 'not_converted' | 'in_trial' | null;
}

const min = (dates: (Date | null)[]): Date | null => dates.reduce<Date | null>((m, d) => (d && (!m || d < m) ? d : m), null);

/** Each contract the service still has, with a StartDate, from its current body. */
export function lifecycles(truth: ScenarioTruth, now: Date): Lifecycle[] {
  const out: Lifecycle[] = [];
  for (const h of truth.histories) {
    if (h.type !== 'Contract' || h.deleted) continue;
    const body = h.states.at(-1)?.body;
    const start = date(field(body, 'StartDate'));
    if (!body || !start) continue;
    const end = date(field(body, 'EndDate'));
    const raw = field(body, 'Phases');
    const phases: Phase[] = (Array.isArray(raw) ? raw : []).map((p, i) => ({
      n: i + 1,
      type: text(field(p, 'Type'))?.toLowerCase() ?? null,
      start: date(field(p, 'StartDate')),
      plan: text(field(p, 'PlanId')),
    }));
    const trialStart = min(phases.filter((p) => p.type === 'trial').map((p) => p.start));
    const trialEnd = trialStart ? (min(phases.filter((p) => p.type !== 'trial' && p.start && p.start > trialStart).map((p) => p.start)) ?? (end && end > trialStart ? end : null)) : null;
    const convertedAt = trialStart
      ? min(phases.filter((p) => p.type === 'normal' && p.start && p.start >= trialStart && (!end || p.start < end) && p.start <= now).map((p) => p.start))
      : null;
    const payingFrom = convertedAt ?? (!trialStart && start <= now ? start : null);
    const endedAt = end && end <= now ? end : null;
    out.push({
      id: h.id,
      planId: text(field(body, 'PlanId')),
      start,
      end,
      phases,
      trialStart,
      trialEnd,
      convertedAt,
      payingFrom,
      endedAt,
      endKind: endedAt ? (payingFrom ? 'churn' : 'trial_not_converted') : null,
      trialOutcome: !trialStart ? null : convertedAt ? 'converted' : trialEnd && trialEnd <= now ? 'not_converted' : 'in_trial',
    });
  }
  return out;
}

/** `day|movement` -> contract ids, for every movement whose date the service gives (all but cancellation and reactivation). */
export function datedMovements(all: Lifecycle[], now: Date): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  const add = (kind: string, id: string, at: Date | null) => {
    if (!at || at > now) return;
    const key = `${utcDay(at)}|${kind}`;
    out.set(key, (out.get(key) ?? new Set()).add(id));
  };
  for (const l of all) {
    add(l.trialStart ? 'trial_start' : 'new', l.id, l.start);
    add('trial_conversion', l.id, l.convertedAt);
    if (l.trialOutcome === 'not_converted') add('trial_not_converted', l.id, l.trialEnd);
    const normal = l.phases.filter((p) => p.type === 'normal' && p.plan && p.start).sort((a, b) => a.start!.getTime() - b.start!.getTime() || a.n - b.n);
    for (let i = 1; i < normal.length; i++) if (normal[i]!.plan !== normal[i - 1]!.plan) add('plan_change', l.id, normal[i]!.start);
    if (l.endKind === 'churn') add('churn', l.id, l.endedAt);
  }
  return new Map([...out].map(([k, ids]) => [k, [...ids].sort()]));
}

/** Contracts whose history shows an EndDate set where the state before had none: a cancellation. */
export function cancelledContracts(truth: ScenarioTruth): string[] {
  const out: string[] = [];
  for (const h of truth.histories) {
    if (h.type !== 'Contract') continue;
    let before: unknown = null;
    for (const s of h.states) {
      if (s.deleted) {
        before = null;
        continue;
      }
      const end = date(field(s.body, 'EndDate'));
      if (end && !before) {
        out.push(h.id);
        break;
      }
      before = end;
    }
  }
  return out.sort();
}

export interface DailyCounts {
  in_trial: number;
  /** active + cancelled_running: when a contract was cancelled the service does not date. */
  running: number;
  ended: number;
}

/** Per plan, the contracts' states at the end of the UTC day `day` (YYYY-MM-DD). */
export function dailyCounts(all: Lifecycle[], day: string): Map<string | null, DailyCounts> {
  const endOfDay = new Date(`${day}T00:00:00Z`).getTime() + 86_400_000;
  const out = new Map<string | null, DailyCounts>();
  for (const l of all) {
    if (l.start.getTime() >= endOfDay) continue;
    const started = l.phases.filter((p) => p.start && p.start.getTime() < endOfDay).sort((a, b) => a.start!.getTime() - b.start!.getTime() || a.n - b.n);
    const plan = started.filter((p) => p.plan).at(-1)?.plan ?? l.planId;
    const counts = out.get(plan) ?? { in_trial: 0, running: 0, ended: 0 };
    if (l.end && l.end.getTime() < endOfDay) counts.ended++;
    else if (started.at(-1)?.type === 'trial') counts.in_trial++;
    else counts.running++;
    out.set(plan, counts);
  }
  return out;
}

export interface CohortRow {
  cohort_month: string;
  trials: number;
  converted: number;
  still_in_trial: number;
  not_converted: number;
}

export function trialCohorts(all: Lifecycle[], now: Date): CohortRow[] {
  const out = new Map<string, CohortRow>();
  for (const l of all) {
    if (!l.trialStart || l.trialStart > now) continue;
    const month = `${utcDay(l.trialStart).slice(0, 7)}-01`;
    const row = out.get(month) ?? { cohort_month: month, trials: 0, converted: 0, still_in_trial: 0, not_converted: 0 };
    row.trials++;
    if (l.trialOutcome === 'converted') row.converted++;
    if (l.trialOutcome === 'in_trial') row.still_in_trial++;
    if (l.trialOutcome === 'not_converted') row.not_converted++;
    out.set(month, row);
  }
  return [...out.values()].sort((a, b) => a.cohort_month.localeCompare(b.cohort_month));
}

export interface PaymentRow {
  day: string;
  provider: string | null;
  currency: string | null;
  succeeded: number;
  failed: number;
  succeeded_amount: number;
  failed_amount: number;
}

/** Each payment transaction's current Status.Status, dated by StatusTimestamp (else the Status object's Timestamp). */
export function paymentOutcomes(truth: ScenarioTruth, now: Date): PaymentRow[] {
  const out = new Map<string, PaymentRow>();
  for (const h of truth.histories) {
    if (h.type !== 'PaymentTransaction' || h.deleted) continue;
    const body = h.states.at(-1)?.body;
    const status = text(field(field(body, 'Status'), 'Status'))?.toLowerCase();
    const at = date(field(body, 'StatusTimestamp')) ?? date(field(field(body, 'Status'), 'Timestamp'));
    if ((status !== 'succeeded' && status !== 'failed') || !at || at > now) continue;
    const provider = text(field(body, 'PaymentProvider'));
    const currency = text(field(body, 'Currency'));
    const key = `${utcDay(at)}|${provider}|${currency}`;
    const row = out.get(key) ?? { day: utcDay(at), provider, currency, succeeded: 0, failed: 0, succeeded_amount: 0, failed_amount: 0 };
    const amount = Number(field(body, 'Amount') ?? 0);
    if (status === 'succeeded') {
      row.succeeded++;
      row.succeeded_amount += amount;
    } else {
      row.failed++;
      row.failed_amount += amount;
    }
    out.set(key, row);
  }
  return [...out.values()].sort((a, b) => `${a.day}|${a.provider}|${a.currency}`.localeCompare(`${b.day}|${b.provider}|${b.currency}`));
}

export interface TruthEpisode {
  contractId: string;
  /** 1, 2, ... per contract, in order. */
  ordinal: number;
  triggerDays: number[];
  /** The emitted events' sequence numbers of its first step and its reset. */
  firstSeq: number;
  resetSeq: number | null;
  /** What the contract owed when it was reset: paid (nothing) or reset (still owing); null while open. */
  outcome: 'paid' | 'reset' | null;
}

/** The escalation episodes as the service had them: its PaymentEscalated and PaymentEscalationReset events, and the contract's balance at each reset. */
export function escalationEpisodes(truth: ScenarioTruth): TruthEpisode[] {
  const contracts = new Map(truth.histories.filter((h) => h.type === 'Contract').map((h) => [h.id, h]));
  const open = new Map<string, TruthEpisode>();
  const count = new Map<string, number>();
  const out: TruthEpisode[] = [];
  for (const e of truth.events) {
    const name = text(field(e.payload, 'Event'));
    const contractId = text(field(e.payload, 'ContractId'));
    if (!contractId || (name !== 'PaymentEscalated' && name !== 'PaymentEscalationReset')) continue;
    if (name === 'PaymentEscalated') {
      let ep = open.get(contractId);
      if (!ep) {
        count.set(contractId, (count.get(contractId) ?? 0) + 1);
        ep = { contractId, ordinal: count.get(contractId)!, triggerDays: [], firstSeq: e.seq, resetSeq: null, outcome: null };
        open.set(contractId, ep);
        out.push(ep);
      }
      const days = Number(field(e.payload, 'TriggerDays'));
      if (Number.isInteger(days)) ep.triggerDays.push(days);
      continue;
    }
    const ep = open.get(contractId);
    if (!ep) continue;
    open.delete(contractId);
    ep.resetSeq = e.seq;
    const states = contracts.get(contractId)?.states ?? [];
    const at = states.filter((s) => s.simulatedAt <= e.simulatedAt && !s.deleted).at(-1);
    const balance = Number(field(at?.body, 'Balance'));
    ep.outcome = Number.isFinite(balance) ? (balance >= 0 ? 'paid' : 'reset') : null;
  }
  return out;
}

export interface ChurnRow {
  month: string;
  paying_at_start: number;
  churned: number;
}

/** Per month up to now's: the contracts paying at its start, and of those the ones that churned in it (docs/ANALYSTS.md, question 1). */
export function monthlyChurn(all: Lifecycle[], now: Date): ChurnRow[] {
  const firsts = all.flatMap((l) => [l.payingFrom, l.trialStart]).filter((d): d is Date => d !== null);
  if (firsts.length === 0) return [];
  const first = new Date(Math.min(...firsts.map((d) => d.getTime())));
  const out: ChurnRow[] = [];
  for (let y = first.getUTCFullYear(), m = first.getUTCMonth(); Date.UTC(y, m, 1) <= now.getTime(); m === 11 ? (y++, (m = 0)) : m++) {
    const start = Date.UTC(y, m, 1);
    const end = Date.UTC(y, m + 1, 1);
    const paying = all.filter((l) => l.payingFrom && l.payingFrom.getTime() < start && (!l.endedAt || l.endedAt.getTime() >= start));
    out.push({
      month: new Date(start).toISOString().slice(0, 10),
      paying_at_start: paying.length,
      churned: paying.filter((l) => l.endKind === 'churn' && l.endedAt!.getTime() < end).length,
    });
  }
  return out;
}

/** A contract's state on the service's clock: active and cancelled-but-running together (the service dates no cancellation). */
export type BusinessState = 'in_trial' | 'running' | 'ended';

export interface ContractOnDate {
  customerId: string | null;
  state: BusinessState;
  plan: string | null;
}

/**
 * Contract id -> its state at a moment on the service's clock (docs/WAREHOUSE.md, "Business
 * dates"), for each contract the service still has, from its current body: started by then
 * (`came(StartDate)`), ended once its EndDate has come, else in trial while the latest phase
 * started by then is a Trial phase, else running; on the plan of the latest phase with a plan
 * started by then, else its PlanId. `came(d)`: whether `d` has come by the moment asked about.
 */
export function contractStates(truth: ScenarioTruth, came: (d: Date) => boolean): Map<string, ContractOnDate> {
  const out = new Map<string, ContractOnDate>();
  for (const h of truth.histories) {
    if (h.type !== 'Contract' || h.deleted) continue;
    const body = h.states.at(-1)?.body;
    const start = date(field(body, 'StartDate'));
    if (!start || !came(start)) continue;
    const end = date(field(body, 'EndDate'));
    const raw = field(body, 'Phases');
    const started = (Array.isArray(raw) ? raw : [])
      .map((p, i) => ({ n: i, type: text(field(p, 'Type'))?.toLowerCase() ?? null, start: date(field(p, 'StartDate')), plan: text(field(p, 'PlanId')) }))
      .filter((p) => p.start && came(p.start))
      .sort((a, b) => a.start!.getTime() - b.start!.getTime() || a.n - b.n);
    const state: BusinessState = end && came(end) ? 'ended' : started.at(-1)?.type === 'trial' ? 'in_trial' : 'running';
    out.set(h.id, { customerId: text(field(body, 'CustomerId')), state, plan: started.filter((p) => p.plan).at(-1)?.plan ?? text(field(body, 'PlanId')) });
  }
  return out;
}

/** At the instant `at`: what has happened at or before it. */
export const cameBy = (at: Date) => (d: Date) => d.getTime() <= at.getTime();
/** By the end of the UTC day `day` (YYYY-MM-DD). */
export const cameOn = (day: string) => (d: Date) => d.getTime() < new Date(`${day}T00:00:00Z`).getTime() + 86_400_000;

export type CustomerStatus = 'paying' | 'in_trial' | 'ended' | 'none';

/**
 * Customer id -> its status at a moment on the service's clock, for each customer the service
 * still has and had created by then (CreatedAt): paying when one of its contracts is running, else
 * in trial when one is, else ended when it has a started contract, else none.
 */
export function customerStatuses(truth: ScenarioTruth, came: (d: Date) => boolean): Map<string, CustomerStatus> {
  const contracts = [...contractStates(truth, came).values()];
  const out = new Map<string, CustomerStatus>();
  for (const h of truth.histories) {
    if (h.type !== 'Customer' || h.deleted) continue;
    const created = date(field(h.states.at(-1)?.body, 'CreatedAt'));
    if (!created || !came(created)) continue;
    const states = contracts.filter((c) => c.customerId === h.id).map((c) => c.state);
    out.set(h.id, states.includes('running') ? 'paying' : states.includes('in_trial') ? 'in_trial' : states.length > 0 ? 'ended' : 'none');
  }
  return out;
}
