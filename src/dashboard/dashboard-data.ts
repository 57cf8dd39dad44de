import type pg from 'pg';
import { RESOURCE_TYPES, type ResourceType } from '../billing-api/resource-types.js';
import { quoteIdent } from '../db/pool.js';
import { METRIC_VIEWS } from '../warehouse/metric-views.js';
import { historyView } from '../warehouse/resource-types.js';
import type { DayRange } from './request-params.js';

/**
 * What each chart of the dashboard shows, read from the metric views (docs/WAREHOUSE.md) with
 * parameterised SQL. Every time series has one point per day of the range, zero where a view
 * has no row, so the page's charts and a direct query of the view agree day for day.
 */

/** The movements of subscription_movements, in the order the page stacks them. */
export const MOVEMENTS = ['new', 'trial_start', 'trial_conversion', 'trial_not_converted', 'plan_change', 'cancellation', 'reactivation', 'churn'] as const;
/** contract_daily's status columns. */
export const CONTRACT_STATUSES = ['in_trial', 'active', 'cancelled_running', 'ended'] as const;

type Num = string | number | null;
const num = (v: Num): number => (v === null ? 0 : Number(v));

export interface DashboardData {
  range(): Promise<DayRange | null>;
  contractDaily(range: DayRange): Promise<ContractDaily>;
  movements(range: DayRange): Promise<Movements>;
  trialCohorts(range: DayRange): Promise<TrialCohorts>;
  episodes(range: DayRange): Promise<Episodes>;
  payments(range: DayRange): Promise<Payments>;
  pipelineHealth(): Promise<PipelineHealth>;
  /** The resource named `id` (contract first, then customer, then the other types), or undefined. */
  timeline(id: string): Promise<Timeline | undefined>;
  /** Readiness: the warehouse answers to the analyst role. */
  check(): Promise<void>;
}

export interface ContractDaily {
  days: string[];
  /** Contracts per status and day; null on a day the view does not cover. */
  byStatus: Record<(typeof CONTRACT_STATUSES)[number], (number | null)[]>;
  /** Running contracts (in trial, active, cancelled but running) per plan and day. */
  byPlan: { planId: string; planName: string | null; values: (number | null)[] }[];
}

export interface Movements {
  days: string[];
  series: Record<(typeof MOVEMENTS)[number], number[]>;
  totals: Record<(typeof MOVEMENTS)[number], number>;
  total: number;
}

export interface TrialCohorts {
  months: string[];
  trials: number[];
  converted: number[];
  /** converted / trials per cohort, in percent (null for a cohort without trials). */
  ratePercent: (number | null)[];
  stillInTrial: number[];
  notConverted: number[];
}

export interface EpisodeFigures {
  /** Episodes open now, whenever they started. */
  openNow: number;
  /** Episodes started in the range, and of those the resolved ones' median duration in hours. */
  started: number;
  resolved: number;
  medianResolutionHours: number | null;
}

export interface Episodes {
  weeks: string[];
  dunningStarted: number[];
  escalationStarted: number[];
  dunning: EpisodeFigures;
  escalation: EpisodeFigures;
}

export interface Payments {
  days: string[];
  succeeded: number[];
  failed: number[];
  totalSucceeded: number;
  totalFailed: number;
  /** succeeded / (succeeded + failed) over the range, in percent; null without payments. */
  successRatePercent: number | null;
}

export interface PipelineHealth {
  minutes: string[];
  webhooks: number[];
  versions: number[];
  freshnessP50S: (number | null)[];
  freshnessP99S: (number | null)[];
  deadLetters: number[];
}

export interface TimelineVersion {
  version: number;
  validFrom: string;
  deleted: boolean;
  sourceEvent: string | null;
  changes: { field: string; old: unknown; new: unknown }[];
}

export interface Timeline {
  type: ResourceType;
  id: string;
  versions: TimelineVersion[];
  /** Resources it points to or that point to it: a contract's customer, a customer's contracts. */
  related: { type: ResourceType; id: string }[];
}

/** The views the dashboard reads besides each type's history and changes; readiness checks them all. */
export const READ_VIEWS: readonly string[] = [...new Set([...METRIC_VIEWS, 'mrr_monthly', 'mrr_movements', 'fx_rates', 'resource_latest', 'contract_current', 'contract_history', 'customer_current', 'metric_dashboard_range', 'metric_contract_currencies', 'metric_movement_counts'])];

/** Hours shown on the page for the pipeline's per-minute chart, ending at its newest minute. */
export const PIPELINE_HEALTH_HOURS = 24;

/** The dashboard's queries over the warehouse in `schema`, through `pool` (the analyst pool in the dashboard). */
export function createDashboardData(pool: pg.Pool, schema: string): DashboardData {
  const s = quoteIdent(schema);
  const q = async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> => (await pool.query<R>(sql, params)).rows;
  const daysOf = (range: DayRange) => q<{ day: string }>(`SELECT d::date::text AS day FROM generate_series($1::date, $2::date, interval '1 day') AS d ORDER BY d`, [range.from, range.to]).then((r) => r.map((x) => x.day));
  /** Spreads (key, day, value) rows over the range's days, zero where a day has none. */
  const spread = (days: string[], rows: { key: string; day: string; value: Num }[]): Map<string, number[]> => {
    const index = new Map(days.map((d, i) => [d, i]));
    const out = new Map<string, number[]>();
    for (const r of rows) {
      const values = out.get(r.key) ?? out.set(r.key, days.map(() => 0)).get(r.key)!;
      const i = index.get(r.day);
      if (i !== undefined) values[i] = (values[i] ?? 0) + num(r.value);
    }
    return out;
  };

  return {
    async range() {
      // The span of what happened: business days of the story, not the loader's clock (a sandbox
      // story set in 2025 is loaded in 2026). metric_dashboard_range reads it from the kept rows by
      // index: from the first contract's StartDate or payment to the latest contract date or
      // payment that has come, and to today while a contract runs, so that the revenue figures the
      // page leads with are then today's MRR, not that of the last change.
      const [r] = await q<{ from: string | null; to: string | null }>(`SELECT first_day::text AS from, last_day::text AS to FROM ${s}.metric_dashboard_range`);
      return r?.from && r.to ? { from: r.from, to: r.to } : null;
    },

    async contractDaily(range) {
      // One reading of contract_daily (a row per day and plan): the statuses are summed over the
      // plans here rather than by a second query of the view.
      const [days, rows, names] = await Promise.all([
        daysOf(range),
        q<{ day: string; plan_id: string | null; in_trial: Num; active: Num; cancelled_running: Num; ended: Num }>(
          `SELECT day::text AS day, plan_id, in_trial, active, cancelled_running, ended FROM ${s}.contract_daily WHERE day BETWEEN $1::date AND $2::date`,
          [range.from, range.to],
        ),
        q<{ plan_id: string; plan_name: string | null }>(`SELECT DISTINCT plan_id, NULL::text AS plan_name FROM ${s}.contract_current WHERE plan_id IS NOT NULL`).then(
          (r) => new Map(r.map((x) => [x.plan_id, x.plan_name])),
        ),
      ]);
      // A day contract_daily does not cover (before the first contract, after its last day) is a
      // gap in the chart, not a day with no contracts.
      const covered = new Set(rows.map((r) => r.day));
      const gaps = (values: number[]): (number | null)[] => values.map((v, i) => (covered.has(days[i] as string) ? v : null));
      const byStatus = Object.fromEntries(
        CONTRACT_STATUSES.map((status) => [status, gaps(spread(days, rows.map((r) => ({ key: status, day: r.day, value: r[status] }))).get(status) ?? days.map(() => 0))]),
      ) as ContractDaily['byStatus'];
      const plans = spread(
        days,
        rows.map((r) => ({ key: r.plan_id ?? '(none)', day: r.day, value: num(r.in_trial) + num(r.active) + num(r.cancelled_running) })),
      );
      const byPlan = [...plans]
        .filter(([, values]) => values.some((v) => v > 0))
        .map(([planId, values]) => ({ planId, planName: names.get(planId) ?? null, values: gaps(values) }))
        .sort((a, b) => (a.planName ?? a.planId).localeCompare(b.planName ?? b.planId) || a.planId.localeCompare(b.planId));
      return { days, byStatus, byPlan };
    },

    async movements(range) {
      const days = await daysOf(range);
      const rows = await q<{ key: string; day: string; value: Num }>(
        `SELECT movement AS key, day::text AS day, contracts AS value FROM ${s}.metric_movement_counts WHERE day BETWEEN $1::date AND $2::date`,
        [range.from, range.to],
      );
      const spreadRows = spread(days, rows);
      const series = Object.fromEntries(MOVEMENTS.map((m) => [m, spreadRows.get(m) ?? days.map(() => 0)])) as Movements['series'];
      const totals = Object.fromEntries(MOVEMENTS.map((m) => [m, series[m].reduce((a, b) => a + b, 0)])) as Movements['totals'];
      return { days, series, totals, total: Object.values(totals).reduce((a, b) => a + b, 0) };
    },

    async trialCohorts(range) {
      const rows = await q<{ month: string; trials: Num; converted: Num; still_in_trial: Num; not_converted: Num }>(
        `SELECT cohort_month::text AS month, trials, converted, still_in_trial, not_converted FROM ${s}.trial_cohorts
          WHERE cohort_month BETWEEN date_trunc('month', $1::date)::date AND $2::date ORDER BY cohort_month`,
        [range.from, range.to],
      );
      return {
        months: rows.map((r) => r.month.slice(0, 7)),
        trials: rows.map((r) => num(r.trials)),
        converted: rows.map((r) => num(r.converted)),
        ratePercent: rows.map((r) => (num(r.trials) > 0 ? Math.round((1000 * num(r.converted)) / num(r.trials)) / 10 : null)),
        stillInTrial: rows.map((r) => num(r.still_in_trial)),
        notConverted: rows.map((r) => num(r.not_converted)),
      };
    },

    async episodes(range) {
      // One statement per view that reads it once (its rows kept, narrow, for the figures and the
      // weeks), the two views at the same time on two of the pool's connections.
      const read = async (view: string) => {
        const [r] = await q<{ open_now: Num; started: Num; resolved: Num; median_hours: Num; weeks: string[]; counts: Num[] }>(
          `WITH e AS MATERIALIZED (SELECT started_at::date AS day, outcome, duration FROM ${s}.${view}),
                r AS (SELECT * FROM e WHERE day BETWEEN $1::date AND $2::date),
                weekly AS (SELECT date_trunc('week', day)::date AS week, count(*) AS n FROM r GROUP BY 1)
           SELECT (SELECT count(*) FROM e WHERE outcome = 'open') AS open_now,
                  (SELECT count(*) FROM r) AS started,
                  (SELECT count(*) FROM r WHERE outcome <> 'open') AS resolved,
                  (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM duration) / 3600) FROM r WHERE outcome <> 'open') AS median_hours,
                  array_agg(w::date::text ORDER BY w) AS weeks,
                  array_agg(coalesce(weekly.n, 0) ORDER BY w) AS counts
             FROM generate_series(date_trunc('week', $1::date), $2::date, interval '1 week') AS w
             LEFT JOIN weekly ON weekly.week = w::date`,
          [range.from, range.to],
        );
        const median = r?.median_hours ?? null;
        const figures: EpisodeFigures = {
          openNow: num(r?.open_now ?? 0),
          started: num(r?.started ?? 0),
          resolved: num(r?.resolved ?? 0),
          medianResolutionHours: median === null ? null : Math.round(Number(median) * 10) / 10,
        };
        return { figures, weeks: r?.weeks ?? [], counts: (r?.counts ?? []).map(num) };
      };
      const [dunning, escalation] = await Promise.all([read('dunning_episodes'), read('payment_escalation_episodes')]);
      return { weeks: dunning.weeks, dunningStarted: dunning.counts, escalationStarted: escalation.counts, dunning: dunning.figures, escalation: escalation.figures };
    },

    async payments(range) {
      const days = await daysOf(range);
      const rows = await q<{ day: string; succeeded: Num; failed: Num }>(
        `SELECT day::text AS day, sum(succeeded) AS succeeded, sum(failed) AS failed FROM ${s}.payment_outcomes WHERE day BETWEEN $1::date AND $2::date GROUP BY day`,
        [range.from, range.to],
      );
      const succeeded = spread(days, rows.map((r) => ({ key: 'x', day: r.day, value: r.succeeded }))).get('x') ?? days.map(() => 0);
      const failed = spread(days, rows.map((r) => ({ key: 'x', day: r.day, value: r.failed }))).get('x') ?? days.map(() => 0);
      const totalSucceeded = succeeded.reduce((a, b) => a + b, 0);
      const totalFailed = failed.reduce((a, b) => a + b, 0);
      const all = totalSucceeded + totalFailed;
      return { days, succeeded, failed, totalSucceeded, totalFailed, successRatePercent: all > 0 ? Math.round((1000 * totalSucceeded) / all) / 10 : null };
    },

    async pipelineHealth() {
      // The hours up to the latest minute with a row (metric_pipeline_last_minute: the last
      // entries of the view's minute indexes, not the view computed), a range of those indexes.
      const rows = await q<{ minute: string; webhooks: Num; versions: Num; p50: number | null; p99: number | null; dead_letters: Num }>(
        `SELECT to_char(minute, 'YYYY-MM-DD HH24:MI') AS minute, webhooks, versions, freshness_p50_s AS p50, freshness_p99_s AS p99, dead_letters
           FROM ${s}.pipeline_health
          WHERE minute > (SELECT l.minute FROM ${s}.metric_pipeline_last_minute l) - make_interval(hours => $1)
          ORDER BY pipeline_health.minute`,
        [PIPELINE_HEALTH_HOURS],
      );
      return {
        minutes: rows.map((r) => r.minute),
        webhooks: rows.map((r) => num(r.webhooks)),
        versions: rows.map((r) => num(r.versions)),
        freshnessP50S: rows.map((r) => r.p50),
        freshnessP99S: rows.map((r) => r.p99),
        deadLetters: rows.map((r) => num(r.dead_letters)),
      };
    },

    async timeline(id) {
      const found = new Set((await q<{ resource_type: string }>(`SELECT resource_type FROM ${s}.resource_latest WHERE resource_id = $1`, [id])).map((r) => r.resource_type));
      const type = RESOURCE_TYPES.find((t) => found.has(t));
      if (!type) return undefined;
      const table = historyView(type).replace(/_history$/, '');
      const versions = await q<{ version: number; valid_from: Date; deleted: boolean; source_event: string | null; changes: TimelineVersion['changes'] }>(
        `SELECT h.version, h.valid_from, h.deleted, h.source_event,
                coalesce((SELECT json_agg(json_build_object('field', c.field, 'old', c.old_value, 'new', c.new_value) ORDER BY c.field)
                            FROM ${s}.${quoteIdent(`${table}_changes`)} AS c WHERE c.resource_id = h.resource_id AND c.version = h.version), '[]') AS changes
           FROM ${s}.${quoteIdent(`${table}_history`)} AS h WHERE h.resource_id = $1 ORDER BY h.version`,
        [id],
      );
      const related: Timeline['related'] = [];
      if (type === 'Contract') {
        const customers = await q<{ customer_id: string }>(`SELECT DISTINCT customer_id FROM ${s}.contract_history WHERE resource_id = $1 AND customer_id IS NOT NULL ORDER BY 1`, [id]);
        related.push(...customers.map((r) => ({ type: 'Customer' as const, id: r.customer_id })));
      } else if (type === 'Customer') {
        const contracts = await q<{ resource_id: string }>(`SELECT DISTINCT resource_id FROM ${s}.contract_history WHERE customer_id = $1 ORDER BY 1`, [id]);
        related.push(...contracts.map((r) => ({ type: 'Contract' as const, id: r.resource_id })));
      }
      return {
        type,
        id,
        versions: versions.map((v) => ({ version: v.version, validFrom: v.valid_from.toISOString(), deleted: v.deleted, sourceEvent: v.source_event, changes: v.changes })),
        related,
      };
    },

    async check() {
      const missing = await q<{ view: string }>(
        `SELECT v AS view FROM unnest($1::text[]) AS v
          WHERE CASE WHEN to_regclass(format('%I.%I', $2::text, v)) IS NULL THEN true ELSE NOT has_table_privilege(to_regclass(format('%I.%I', $2::text, v)), 'SELECT') END`,
        [READ_VIEWS, schema],
      );
      if (missing.length > 0) throw new Error(`schema ${schema} lacks ${missing.map((m) => m.view).join(', ')}, or the analyst role may not read them: run billing-loader migrate`);
    },
  };
}
