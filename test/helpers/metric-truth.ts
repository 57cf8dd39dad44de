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

/**
 * MRR in money (docs/WAREHOUSE.md#mrr-in-money), from the truth: the contracts' current bodies
 * (their phases, currency, customer) and a price book of the plan variants.
 */

/** One price of a plan variant, in force from `from` (ms; -Infinity: for all time before the next). */
export interface PriceVersion {
  from: number;
  fee: number;
  unit: string | null;
  quantity: number | null;
}

/** Plan variant id -> its prices, in order. */
export type PriceBook = Map<string, PriceVersion[]>;

/** A fee per FeePeriod as a monthly amount: Month /q, Year /12q, Week x52/12q, Day x365/12q; null for another unit. */
export function monthlyFee(fee: number, unit: string | null, quantity: number | null): number | null {
  const q = quantity ?? 1;
  if (q === 0) return null;
  switch (unit?.toLowerCase()) {
    case 'month':
      return fee / q;
    case 'year':
      return fee / (12 * q);
    case 'week':
      return (fee * 52) / (12 * q);
    case 'day':
      return (fee * 365) / (12 * q);
    default:
      return null;
  }
}

/**
 * The prices as the loader can know them: the service dates no price change, so a state counts
 * from when the service made it visible (its wall-clock time), the first one the loader could
 * read (current when the first event naming the variant was sent: the loader reads the catalog
 * on its events) for all time before. Deleted states carry no price.
 */
export function truthPriceBook(truth: ScenarioTruth): PriceBook {
  const book: PriceBook = new Map();
  for (const h of truth.histories) {
    if (h.type !== 'PlanVariant') continue;
    const first = truth.events.find((e) => text(field(e.payload, 'PlanVariantId')) === h.id);
    const states = h.states.filter((s) => !s.deleted && s.body);
    const startAt = first ? states.filter((s) => s.wallAt <= first.wallAt).length - 1 : states.length - 1;
    const known = states.slice(Math.max(0, startAt));
    book.set(
      h.id,
      known.map((s, i) => {
        const period = field(s.body, 'FeePeriod');
        return {
          from: i === 0 ? -Infinity : Date.parse(s.wallAt),
          fee: Number(field(s.body, 'RecurringFee')),
          unit: text(field(period, 'Unit')),
          quantity: typeof field(period, 'Quantity') === 'number' ? (field(period, 'Quantity') as number) : null,
        };
      }),
    );
  }
  return book;
}

/** A rate into the reporting currency, valid from a UTC day (YYYY-MM-DD). */
export interface FxRate {
  currency: string;
  validFrom: string;
  rate: number;
}

function rateOn(rates: readonly FxRate[], currency: string | null, day: string): number | null {
  const r = rates.filter((x) => x.currency === currency && x.validFrom <= day).sort((a, b) => a.validFrom.localeCompare(b.validFrom)).at(-1);
  return r ? r.rate : null;
}

export interface MrrDayRow {
  day: string;
  contract_id: string;
  customer_id: string | null;
  currency: string | null;
  plan_variant_id: string;
  quantity: number;
  mrr: number | null;
  mrr_reporting: number | null;
}

const DAY_MS = 86_400_000;

/**
 * Per contract the service still has and UTC day up to `now`: the Normal phase in force at the
 * end of the day (at `now` for today), unless the EndDate has come before; its variant's monthly
 * fee in force then x the phase's Quantity.
 */
export function mrrDaily(truth: ScenarioTruth, now: Date, prices: PriceBook, rates: readonly FxRate[] = []): MrrDayRow[] {
  const out: MrrDayRow[] = [];
  for (const h of truth.histories) {
    if (h.type !== 'Contract' || h.deleted) continue;
    const body = h.states.at(-1)?.body;
    if (!body || !date(field(body, 'StartDate'))) continue;
    const end = date(field(body, 'EndDate'));
    const currency = text(field(body, 'Currency'))?.toUpperCase() ?? null;
    const raw = field(body, 'Phases');
    const phases = (Array.isArray(raw) ? raw : [])
      .map((p, i) => ({ n: i, type: text(field(p, 'Type'))?.toLowerCase() ?? null, start: date(field(p, 'StartDate')), variant: text(field(p, 'PlanVariantId')), quantity: field(p, 'Quantity') }))
      .filter((p) => p.start !== null)
      .sort((a, b) => a.start!.getTime() - b.start!.getTime() || a.n - b.n);
    if (phases.length === 0) continue;
    const firstDay = Date.parse(`${utcDay(phases[0]!.start!)}T00:00:00Z`);
    for (let d = firstDay; d < now.getTime(); d += DAY_MS) {
      const at = Math.min(d + DAY_MS, now.getTime());
      if (end && end.getTime() < at) break;
      const current = phases.filter((p) => p.start!.getTime() < at).at(-1);
      if (!current || current.type !== 'normal' || !current.variant) continue;
      const quantity = typeof current.quantity === 'number' ? current.quantity : 1;
      const price = (prices.get(current.variant) ?? []).filter((v) => v.from < at).at(-1);
      const fee = price ? monthlyFee(price.fee, price.unit, price.quantity) : null;
      const mrr = fee === null ? null : fee * quantity;
      const day = new Date(d).toISOString().slice(0, 10);
      const rate = rateOn(rates, currency, day);
      out.push({ day, contract_id: h.id, customer_id: text(field(body, 'CustomerId')), currency, plan_variant_id: current.variant, quantity, mrr, mrr_reporting: mrr === null || rate === null ? null : mrr * rate });
    }
  }
  return out.sort((a, b) => `${a.day}|${a.contract_id}`.localeCompare(`${b.day}|${b.contract_id}`));
}

export type MrrMovement = 'new' | 'expansion' | 'contraction' | 'churn' | 'reactivation' | 'unchanged';

export interface MrrMovementRow {
  month: string;
  customer_id: string | null;
  currency: string | null;
  previous_mrr: number;
  mrr: number;
  movement: MrrMovement;
  amount: number;
  rate: number | null;
}

const monthOf = (day: string): string => `${day.slice(0, 7)}-01`;
function nextMonth(month: string): string {
  const d = new Date(`${month}T00:00:00Z`);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
}
/** The day a month's MRR is read: its last day, or today for the running month. */
function monthEndDay(month: string, now: Date): string {
  const last = new Date(Date.parse(`${nextMonth(month)}T00:00:00Z`) - DAY_MS).toISOString().slice(0, 10);
  const today = utcDay(now);
  return last < today ? last : today;
}

/** Per customer, currency and month: MRR at the month's end against the previous month's end, with ChartMogul's movement. */
export function mrrMovements(days: readonly MrrDayRow[], now: Date, rates: readonly FxRate[] = []): MrrMovementRow[] {
  const snap = new Map<string, number>();
  const key = (month: string, customer: string | null, currency: string | null) => `${month}|${customer}|${currency}`;
  for (const r of days) {
    if (r.mrr === null || r.day !== monthEndDay(monthOf(r.day), now)) continue;
    const k = key(monthOf(r.day), r.customer_id, r.currency);
    snap.set(k, (snap.get(k) ?? 0) + r.mrr);
  }
  const running = monthOf(utcDay(now));
  const keys = new Set<string>();
  for (const [k, mrr] of snap) {
    if (mrr <= 0) continue;
    keys.add(k);
    const [month, customer, currency] = k.split('|') as [string, string, string];
    if (nextMonth(month) <= running) keys.add(`${nextMonth(month)}|${customer}|${currency}`);
  }
  const out: MrrMovementRow[] = [];
  for (const k of keys) {
    const [month, customer, currency] = k.split('|') as [string, string, string];
    const mrr = snap.get(k) ?? 0;
    const prevMonth = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)) - 2, 1)).toISOString().slice(0, 10);
    const previous = snap.get(`${prevMonth}|${customer}|${currency}`) ?? 0;
    const paidBefore = [...snap].some(([o, v]) => v > 0 && o.endsWith(`|${customer}|${currency}`) && o.slice(0, 10) < month);
    const movement: MrrMovement =
      previous === 0 && mrr > 0 ? (paidBefore ? 'reactivation' : 'new') : previous > 0 && mrr === 0 ? 'churn' : mrr > previous ? 'expansion' : mrr < previous ? 'contraction' : 'unchanged';
    out.push({ month, customer_id: customer === 'null' ? null : customer, currency: currency === 'null' ? null : currency, previous_mrr: previous, mrr, movement, amount: mrr - previous, rate: rateOn(rates, currency === 'null' ? null : currency, monthEndDay(month, now)) });
  }
  return out.sort((a, b) => `${a.month}|${a.customer_id}|${a.currency}`.localeCompare(`${b.month}|${b.customer_id}|${b.currency}`));
}

export interface MrrMonthRow {
  month: string;
  /** null: every currency in the reporting currency. */
  currency: string | null;
  mrr: number | null;
  arr: number | null;
  customers: number;
  arpa: number | null;
  new: number | null;
  expansion: number | null;
  contraction: number | null;
  churn: number | null;
  reactivation: number | null;
  starting_mrr: number | null;
  nrr: number | null;
  grr: number | null;
  /** Customers paying at the previous month's end, and those of them paying nothing at this one's (in any currency, for the reporting row). */
  starting_customers: number;
  churned_customers: number;
}

/** Per month and currency, and per month in the reporting currency: MRR, ARR, ARPA, the movements, NRR, GRR, the logos. */
export function mrrMonthly(movements: readonly MrrMovementRow[]): MrrMonthRow[] {
  const groups = new Map<string, { month: string; currency: string | null; rows: { customer: string | null; m: MrrMovementRow; f: number | null }[] }>();
  for (const m of movements) {
    // Without a currency, only in the reporting row (where it has no rate).
    const into = m.currency === null ? ([[null, m.rate]] as const) : ([[m.currency, 1], [null, m.rate]] as const);
    for (const [currency, f] of into) {
      const k = `${m.month}|${currency}`;
      const g = groups.get(k) ?? { month: m.month, currency, rows: [] };
      g.rows.push({ customer: m.customer_id, m, f });
      groups.set(k, g);
    }
  }
  const out: MrrMonthRow[] = [];
  for (const g of groups.values()) {
    const complete = g.rows.every((r) => r.f !== null);
    const sum = (pick: (m: MrrMovementRow) => number, when: (m: MrrMovementRow) => boolean = () => true) =>
      g.rows.filter((r) => when(r.m)).reduce((a, r) => a + pick(r.m) * (r.f ?? 0), 0);
    const mrr = sum((m) => m.mrr);
    const customers = new Set(g.rows.filter((r) => r.m.mrr > 0).map((r) => r.customer)).size;
    const starting = sum((m) => m.previous_mrr);
    const kind = (k: MrrMovement) => sum((m) => m.amount, (m) => m.movement === k);
    const c = <T>(v: T): T | null => (complete ? v : null);
    const was = new Set(g.rows.filter((r) => r.m.previous_mrr > 0).map((r) => r.customer));
    const is = new Set(g.rows.filter((r) => r.m.mrr > 0).map((r) => r.customer));
    out.push({
      month: g.month,
      currency: g.currency,
      mrr: c(mrr),
      arr: c(12 * mrr),
      customers,
      arpa: c(customers > 0 ? mrr / customers : null),
      new: c(kind('new')),
      expansion: c(kind('expansion')),
      contraction: c(kind('contraction')),
      churn: c(kind('churn')),
      reactivation: c(kind('reactivation')),
      starting_mrr: c(g.rows.length > 0 ? starting : null),
      nrr: c(starting > 0 ? sum((m) => m.mrr, (m) => m.previous_mrr > 0) / starting : null),
      grr: c(starting > 0 ? sum((m) => Math.min(m.mrr, m.previous_mrr), (m) => m.previous_mrr > 0) / starting : null),
      starting_customers: was.size,
      churned_customers: [...was].filter((customer) => !is.has(customer)).length,
    });
  }
  return out.sort((a, b) => `${a.month}|${a.currency ?? ''}`.localeCompare(`${b.month}|${b.currency ?? ''}`));
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
