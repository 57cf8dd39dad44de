import type pg from 'pg';
import { quoteIdent } from '../db/pool.js';
import type { DayRange } from './request-params.js';

/**
 * The dashboard's revenue figures, read from the MRR views (docs/WAREHOUSE.md, "MRR in money"):
 * each request one statement over `mrr_monthly` (money, ARR, ARPA, NRR, GRR) and `mrr_movements`
 * (customers at the month's start and of those the churned ones), bounded by the range's months.
 * Nothing is recomputed here that the views define; only the two churn rates are ratios of their
 * columns.
 */

/** The MRR movements in the order the page stacks them (contraction and churn are negative). */
export const MRR_MOVEMENTS = ['new', 'expansion', 'reactivation', 'contraction', 'churn'] as const;

/** `null` is the reporting currency: every currency converted through fx_rates (mrr_monthly's `currency` NULL). */
export type RevenueCurrency = string | null;

export interface Currencies {
  /** The contracts' currencies, the one with the most contracts first. */
  currencies: string[];
  /** Whether the analyst has entered exchange rates (fx_rates), so that a reporting currency exists. */
  reporting: boolean;
}

export interface Revenue {
  currency: RevenueCurrency;
  /** YYYY-MM of each month of the range; the running month's figures are at today. */
  months: string[];
  /** Per month; null where mrr_monthly has no row, or (reporting currency) a currency lacks a rate. */
  mrr: (number | null)[];
  arr: (number | null)[];
  customers: (number | null)[];
  arpa: (number | null)[];
  movements: Record<(typeof MRR_MOVEMENTS)[number], (number | null)[]>;
  netNewMrr: (number | null)[];
  startingMrr: (number | null)[];
  /** mrr_monthly's nrr and grr as ratios (1 = 100 %). */
  nrr: (number | null)[];
  grr: (number | null)[];
  /** Customers paying at the previous month's end, and of those the ones paying nothing at this month's end. */
  startingCustomers: number[];
  churnedCustomers: number[];
  /** churnedCustomers / startingCustomers in percent; null without starting customers. */
  logoChurnPercent: (number | null)[];
  /** Gross MRR churn: −(churn + contraction) / startingMrr in percent; null without starting MRR. */
  revenueChurnPercent: (number | null)[];
}

type Num = string | number | null;
const numOrNull = (v: Num): number | null => (v === null ? null : Number(v));

export interface RevenueData {
  currencies(): Promise<Currencies>;
  revenue(range: DayRange, currency: RevenueCurrency): Promise<Revenue>;
}

export function createRevenueData(pool: pg.Pool, schema: string): RevenueData {
  const s = quoteIdent(schema);
  return {
    async currencies() {
      // The currencies of the contracts the MRR views price, counted from the kept rows by index
      // (metric_contract_currencies): this answers before the first chart.
      const { rows } = await pool.query<{ currencies: string[] | null; reporting: boolean }>(
        `SELECT (SELECT array_agg(currency ORDER BY contracts DESC, currency) FROM ${s}.metric_contract_currencies) AS currencies,
                EXISTS (SELECT 1 FROM ${s}.fx_rates) AS reporting`,
      );
      return { currencies: rows[0]?.currencies ?? [], reporting: rows[0]?.reporting ?? false };
    },

    async revenue(range, currency) {
      type Row = Record<'month' | 'mrr' | 'arr' | 'customers' | 'arpa' | 'new' | 'expansion' | 'contraction' | 'churn' | 'reactivation' | 'net_new_mrr' | 'starting_mrr' | 'nrr' | 'grr' | 'starting_customers' | 'churned_customers', Num>;
      // Logo churn from mrr_monthly's starting and churned customers (a customer churned in a
      // month when it paid something at the previous month's end and nothing at this one's, in
      // the chosen currency or, reporting currency, in all of them): one read of the MRR views.
      const { rows } = await pool.query<Row>(
        `WITH monthly AS (
           SELECT * FROM ${s}.mrr_monthly
            WHERE month BETWEEN date_trunc('month', $1::date)::date AND $2::date AND currency IS NOT DISTINCT FROM $3::text
         )
         SELECT to_char(g, 'YYYY-MM') AS month, m.mrr, m.arr, m.customers, m.arpa, m.new, m.expansion, m.contraction, m.churn, m.reactivation,
                m.net_new_mrr, m.starting_mrr, m.nrr, m.grr, coalesce(m.starting_customers, 0) AS starting_customers, coalesce(m.churned_customers, 0) AS churned_customers
           FROM generate_series(date_trunc('month', $1::date), $2::date, interval '1 month') AS g
           LEFT JOIN monthly m ON m.month = g::date
          ORDER BY g`,
        [range.from, range.to, currency],
      );
      const col = (k: keyof Row) => rows.map((r) => numOrNull(r[k]));
      const startingCustomers = rows.map((r) => Number(r.starting_customers));
      const churnedCustomers = rows.map((r) => Number(r.churned_customers));
      const startingMrr = col('starting_mrr');
      const [contraction, churn] = [col('contraction'), col('churn')];
      return {
        currency,
        months: rows.map((r) => String(r.month)),
        mrr: col('mrr'),
        arr: col('arr'),
        customers: col('customers'),
        arpa: col('arpa'),
        movements: Object.fromEntries(MRR_MOVEMENTS.map((m) => [m, col(m)])) as Revenue['movements'],
        netNewMrr: col('net_new_mrr'),
        startingMrr,
        nrr: col('nrr'),
        grr: col('grr'),
        startingCustomers,
        churnedCustomers,
        logoChurnPercent: startingCustomers.map((n, i) => (n > 0 ? (100 * (churnedCustomers[i] ?? 0)) / n : null)),
        revenueChurnPercent: startingMrr.map((base, i) => {
          const lost = contraction[i] ?? null;
          const gone = churn[i] ?? null;
          return base !== null && base > 0 && lost !== null && gone !== null ? (-100 * (lost + gone)) / base : null;
        }),
      };
    },
  };
}
