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
export const MOVEMENTS = ['new', 'trial_conversion', 'upgrade', 'downgrade', 'cancellation', 'reactivation', 'churn'] as const;
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
export const READ_VIEWS: readonly string[] = [...METRIC_VIEWS, 'resource_latest', 'contract_current', 'contract_history'];

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
      // story set in 2025 is loaded in 2026, and contract_daily may run on to today).
      const [r] = await q<{ from: string | null; to: string | null }>(
        `SELECT least((SELECT min(day) FROM ${s}.contract_daily), (SELECT min(day) FROM ${s}.subscription_movements), (SELECT min(day) FROM ${s}.payment_outcomes))::text AS from,
                coalesce(greatest((SELECT max(day) FROM ${s}.subscription_movements), (SELECT max(day) FROM ${s}.payment_outcomes)), (SELECT max(day) FROM ${s}.contract_daily))::text AS to`,
      );
      return r?.from && r.to ? { from: r.from, to: r.to } : null;
    },

    async contractDaily(range) {
      const days = await daysOf(range);
      const statusRows = await q<{ day: string; in_trial: Num; active: Num; cancelled_running: Num; ended: Num }>(
        `SELECT day::text AS day, sum(in_trial) AS in_trial, sum(active) AS active, sum(cancelled_running) AS cancelled_running, sum(ended) AS ended
           FROM ${s}.contract_daily WHERE day BETWEEN $1::date AND $2::date GROUP BY day`,
        [range.from, range.to],
      );
      // A day contract_daily does not cover (before the first contract, after its last day) is a
      // gap in the chart, not a day with no contracts.
      const covered = new Set(statusRows.map((r) => r.day));
      const gaps = (values: number[]): (number | null)[] => values.map((v, i) => (covered.has(days[i] as string) ? v : null));
      const byStatus = Object.fromEntries(
        CONTRACT_STATUSES.map((status) => [status, gaps(spread(days, statusRows.map((r) => ({ key: status, day: r.day, value: r[status] }))).get(status) ?? days.map(() => 0))]),
      ) as ContractDaily['byStatus'];
      const planRows = await q<{ key: string; day: string; value: Num }>(
        `SELECT coalesce(plan_id, '(none)') AS key, day::text AS day, sum(in_trial + active + cancelled_running) AS value
           FROM ${s}.contract_daily WHERE day BETWEEN $1::date AND $2::date GROUP BY 1, 2`,
        [range.from, range.to],
      );
      const plans = spread(days, planRows);
      const names = new Map(
        (await q<{ plan_id: string; plan_name: string | null }>(`SELECT plan_id, max(plan_name) AS plan_name FROM ${s}.contract_current WHERE plan_id = ANY($1) GROUP BY plan_id`, [[...plans.keys()]])).map((r) => [
          r.plan_id,
          r.plan_name,
        ]),
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
        `SELECT movement AS key, day::text AS day, sum(contracts) AS value FROM ${s}.subscription_movements WHERE day BETWEEN $1::date AND $2::date GROUP BY 1, 2`,
        [range.from, range.to],
      );
      const spreadRows = spread(days, rows);
      const series = Object.fromEntries(MOVEMENTS.map((m) => [m, spreadRows.get(m) ?? days.map(() => 0)])) as Movements['series'];
      const totals = Object.fromEntries(MOVEMENTS.map((m) => [m, series[m].reduce((a, b) => a + b, 0)])) as Movements['totals'];
      return { days, series, totals, total: Object.values(totals).reduce((a, b) => a + b, 0) };
    },

    async trialCohorts(range) {
      const rows = await q<{ month: string; trials: Num; converted: Num }>(
        `SELECT cohort_month::text AS month, trials, converted FROM ${s}.trial_cohorts
          WHERE cohort_month BETWEEN date_trunc('month', $1::date)::date AND $2::date ORDER BY cohort_month`,
        [range.from, range.to],
      );
      return {
        months: rows.map((r) => r.month.slice(0, 7)),
        trials: rows.map((r) => num(r.trials)),
        converted: rows.map((r) => num(r.converted)),
        ratePercent: rows.map((r) => (num(r.trials) > 0 ? Math.round((1000 * num(r.converted)) / num(r.trials)) / 10 : null)),
      };
    },

    async episodes(range) {
      const figures = async (view: string): Promise<EpisodeFigures> => {
        const [r] = await q<{ open_now: Num; started: Num; resolved: Num; median_hours: Num }>(
          `SELECT (SELECT count(*) FROM ${s}.${view} WHERE outcome = 'open') AS open_now,
                  count(*) AS started, count(*) FILTER (WHERE outcome <> 'open') AS resolved,
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM duration) / 3600) FILTER (WHERE outcome <> 'open') AS median_hours
             FROM ${s}.${view} WHERE started_at::date BETWEEN $1::date AND $2::date`,
          [range.from, range.to],
        );
        const median = r?.median_hours ?? null;
        return { openNow: num(r?.open_now ?? 0), started: num(r?.started ?? 0), resolved: num(r?.resolved ?? 0), medianResolutionHours: median === null ? null : Math.round(Number(median) * 10) / 10 };
      };
      const weekly = await q<{ week: string; dunning: Num; escalation: Num }>(
        `WITH started AS (
           SELECT 'dunning' AS kind, started_at FROM ${s}.dunning_episodes
           UNION ALL SELECT 'escalation', started_at FROM ${s}.payment_escalation_episodes)
         SELECT w::date::text AS week,
                count(st.*) FILTER (WHERE st.kind = 'dunning') AS dunning, count(st.*) FILTER (WHERE st.kind = 'escalation') AS escalation
           FROM generate_series(date_trunc('week', $1::date), $2::date, interval '1 week') AS w
           LEFT JOIN started st ON st.started_at::date BETWEEN greatest(w::date, $1::date) AND least(w::date + 6, $2::date)
          GROUP BY w ORDER BY w`,
        [range.from, range.to],
      );
      return {
        weeks: weekly.map((r) => r.week),
        dunningStarted: weekly.map((r) => num(r.dunning)),
        escalationStarted: weekly.map((r) => num(r.escalation)),
        dunning: await figures('dunning_episodes'),
        escalation: await figures('payment_escalation_episodes'),
      };
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
      // The latest minute: among the last hour's, else the last day's, when there are any (the
      // same maximum, from a range of the view's minute indexes), else over the whole view.
      const rows = await q<{ minute: string; webhooks: Num; versions: Num; p50: number | null; p99: number | null; dead_letters: Num }>(
        `SELECT to_char(minute, 'YYYY-MM-DD HH24:MI') AS minute, webhooks, versions, freshness_p50_s AS p50, freshness_p99_s AS p99, dead_letters
           FROM ${s}.pipeline_health
          WHERE minute > coalesce((SELECT max(minute) FROM ${s}.pipeline_health WHERE minute > now() - interval '1 hour'),
                                  (SELECT max(minute) FROM ${s}.pipeline_health WHERE minute > now() - interval '1 day'),
                                  (SELECT max(minute) FROM ${s}.pipeline_health)) - make_interval(hours => $1)
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
