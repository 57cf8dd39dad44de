// The metric views', business-date functions' and dashboard requests' timings of
// bench/warehouse/run.mjs (docs/BENCHMARKS.md, "Metric views"). Not a test: it measures and
// prints, and asserts nothing about time.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createPool, quoteIdent } from '../../dist/db/pool.js';
import { createAnalystPool } from '../../dist/dashboard/analyst-pool.js';
import { searchCustomers } from '../../dist/dashboard/customer-search.js';
import { createDashboardData } from '../../dist/dashboard/dashboard-data.js';
import { createRevenueData } from '../../dist/dashboard/revenue-data.js';
import { METRIC_VIEWS } from '../../dist/warehouse/metric-views.js';

/** The dashboard-form filters' 90 days (the page's default is the whole range; an analyst narrows it). */
const RANGE = ['2026-01-01', '2026-04-01'];

/** The median of some durations in ms, to 0.1 ms. */
export const median = (times) => {
  const sorted = [...times].sort((a, b) => a - b);
  return +sorted[Math.floor(sorted.length / 2)].toFixed(1);
};

/**
 * Runs `call` up to `runs` times and gives the median; a call that took longer than `longMs`
 * is not repeated (at 10,000,000 versions a slow view would otherwise take the hour). A call the
 * server cancelled at its statement_timeout (--timeout-s) gives no time: `timedOut`.
 */
async function repeat(call, runs, longMs) {
  const times = [];
  let last;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    try {
      last = await call();
    } catch (err) {
      // 57014 query_canceled: the statement_timeout this benchmark set, not a failure of the view.
      if (err?.code === '57014') return { ms: null, runs: times.length + 1, last: undefined, timedOut: true };
      throw err;
    }
    times.push(performance.now() - t);
    if (times.at(-1) > longMs) break;
  }
  return { ms: median(times), runs: times.length, last };
}

/** `databaseUrl` whose sessions cancel a statement after `timeoutS` seconds (0: never). */
function withTimeout(databaseUrl, timeoutS) {
  if (!(timeoutS > 0)) return databaseUrl;
  const url = new URL(databaseUrl);
  url.searchParams.set('options', [url.searchParams.get('options'), `-c statement_timeout=${Math.round(timeoutS * 1000)}`].filter(Boolean).join(' '));
  return url.toString();
}

/** How a timing reads in the progress lines. */
const shown = (r, runs, what) => (r.timedOut ? 'cancelled at --timeout-s' : `${r.ms} ms (${what}${r.runs < runs ? `, ${r.runs} run` : ''})`);

/**
 * Every row of a SELECT, computed, serialized and sent to the client as `COPY (...) TO STDOUT`
 * does (the plan of a plain SELECT, run to the end), without building a JavaScript object per row:
 * mrr_daily has a row per contract and day, millions at 1,000,000 versions. The rows are not
 * parsed; the count is the server's.
 */
async function fetchAll(pool, sql) {
  const result = await pool.query(`COPY (${sql}) TO STDOUT`);
  return result.rowCount ?? 0;
}

/** `sql` with its parameters written in as literals: COPY (...) TO STDOUT takes no parameters. */
const inlined = (sql, params) => sql.replace(/\$(\d+)/g, (_, n) => pg.escapeLiteral(String(params[Number(n) - 1])));

/** Questions on the metric views: each whole, and the forms the dashboard (or an analyst looking at one contract or customer) reads. */
function viewForms(S, p) {
  const q = (name, sql, params = []) => ({ name, sql, params });
  return [
    q('contract_daily, 90 days', `SELECT * FROM ${S}.contract_daily WHERE day >= $1 AND day < $2`, RANGE),
    q('subscription_movements, 90 days', `SELECT * FROM ${S}.subscription_movements WHERE day >= $1 AND day < $2`, RANGE),
    q('dunning_episodes, open', `SELECT * FROM ${S}.dunning_episodes WHERE outcome = 'open'`),
    q('payment_escalation_episodes, open', `SELECT * FROM ${S}.payment_escalation_episodes WHERE outcome = 'open'`),
    q('payment_outcomes, 90 days', `SELECT * FROM ${S}.payment_outcomes WHERE day >= $1 AND day < $2`, RANGE),
    q('pipeline_health, last hour', `SELECT * FROM ${S}.pipeline_health WHERE minute >= now() - interval '1 hour'`),
    // The hour up to the generation's last load: what the pipeline tile reads during a backfill of that size.
    q('pipeline_health, the hour of the latest loads', `SELECT * FROM ${S}.pipeline_health WHERE minute > (SELECT max(minute) FROM ${S}.version_load_minutes) - interval '1 hour' AND minute <= (SELECT max(minute) FROM ${S}.version_load_minutes)`),
    q('mrr_daily, one day', `SELECT * FROM ${S}.mrr_daily WHERE day = $1`, [p.day]),
    q('mrr_movements, 90 days', `SELECT * FROM ${S}.mrr_movements WHERE month >= $1 AND month < $2`, RANGE),
    q('mrr_monthly, reporting currency', `SELECT * FROM ${S}.mrr_monthly WHERE currency IS NULL`),
    q(`mrr_monthly, ${p.currency}`, `SELECT * FROM ${S}.mrr_monthly WHERE currency = $1`, [p.currency]),
    q('subscription_overview, one contract', `SELECT * FROM ${S}.subscription_overview WHERE contract_id = $1`, [p.contract]),
    q('customer_overview, one customer', `SELECT * FROM ${S}.customer_overview WHERE customer_id = $1`, [p.customer]),
    q('contract_segments, one contract', `SELECT * FROM ${S}.contract_segments WHERE contract_id = $1`, [p.contract]),
  ];
}

/** The business-date functions: a recent day, counted and fetched, and contract_state_on at the 12 month-ends before it. */
function stateFunctions(S, p) {
  const monthEnds = `SELECT (m + interval '1 month - 1 day')::date AS day
                       FROM generate_series(date_trunc('month', '${p.day}'::date) - interval '12 months', date_trunc('month', '${p.day}'::date) - interval '1 month', interval '1 month') AS m`;
  return [
    { name: `contract_state_on(${p.day}), count(*)`, sql: `SELECT count(*) FROM ${S}.contract_state_on('${p.day}')` },
    { name: `contract_state_on(${p.day}), fetched`, sql: `SELECT * FROM ${S}.contract_state_on('${p.day}')`, whole: true },
    { name: `customer_state_on(${p.day}), count(*)`, sql: `SELECT count(*) FROM ${S}.customer_state_on('${p.day}')` },
    { name: `customer_state_on(${p.day}), fetched`, sql: `SELECT * FROM ${S}.customer_state_on('${p.day}')`, whole: true },
    {
      name: 'contract_state_on at 12 month-ends, by state and plan',
      sql: `SELECT e.day, s.state, s.plan_id, count(*) FROM (${monthEnds}) e CROSS JOIN LATERAL ${S}.contract_state_on(e.day) s GROUP BY 1, 2, 3`,
      whole: true,
    },
  ];
}

/**
 * What the timings pick from the warehouse: a contract with five versions and its customer (the
 * customer search looks for that customer's name, e-mail address and external id), the
 * contracts' most common currency, and yesterday (UTC) as the recent day.
 */
async function picks(pool, S) {
  const { rows } = await pool.query(
    `SELECT c.resource_id AS contract, c.customer_id AS customer,
            (SELECT upper(currency) FROM ${S}.contract_current WHERE currency ~* '^[a-z]{3}$' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1) AS currency
       FROM ${S}.contract_current c
      WHERE c.resource_id = (SELECT resource_id FROM ${S}.resource_heads WHERE resource_type = 'Contract' AND version = 5 ORDER BY resource_id LIMIT 1)`,
  );
  const p = rows[0] ?? {};
  const { rows: customers } = await pool.query(
    `SELECT concat_ws(' ', first_name, last_name) AS name, email_address, external_customer_id FROM ${S}.customer_current WHERE resource_id = $1`,
    [p.customer],
  );
  return { ...p, currency: p.currency ?? 'EUR', searches: customers[0] ?? {}, day: new Date(Date.now() - 86_400_000).toISOString().slice(0, 10) };
}

/**
 * Times every public metric view whole (all rows fetched), the views as the dashboard reads them,
 * the business-date functions, and every dashboard request through the data layer the server
 * calls (the SQL of one request, possibly several statements, without HTTP; the analyst role's
 * sessions and work_mem), then the first load as dashboard/dashboard.js sends it. Each the
 * median of `runs`, unless a run took longer than `longMs`.
 */
export async function timeMetrics({ pool, databaseUrl, schema, runs, longMs, timeoutS, dashboardOnly = false, log, say }) {
  const S = quoteIdent(schema);
  const p = await picks(pool, S);
  // The views' own sessions: the owner's, as an analyst querying the warehouse, with the timeout.
  const viewsPool = createPool({ databaseUrl: withTimeout(databaseUrl, timeoutS), applicationName: 'bench-warehouse metrics', log, max: 2 });
  // Through the dashboard's own sessions: the analyst role, read-only, its work_mem, its pool.
  const dashboardPool = createAnalystPool({ databaseUrl: withTimeout(databaseUrl, timeoutS), log });
  const views = [];
  const functions = [];
  const requests = [];
  try {
    // --dashboard-only: the dashboard's requests and first load alone.
    for (const view of dashboardOnly ? [] : METRIC_VIEWS) {
      const r = await repeat(() => fetchAll(viewsPool, `SELECT * FROM ${S}.${quoteIdent(view)}`), runs, longMs);
      views.push({ query: view, form: 'whole', ms: r.ms, rows: r.last, runs: r.runs, timedOut: r.timedOut });
      say(`${view}: ${shown(r, runs, `${r.last} rows fetched`)}`);
    }
    // Each form twice: as the server computes and sends it (COPY, rows counted), and through
    // `pg`, which builds a JavaScript object per row (a client's own cost, large for big answers).
    for (const q of dashboardOnly ? [] : viewForms(S, p)) {
      const served = await repeat(() => fetchAll(viewsPool, inlined(q.sql, q.params)), runs, longMs);
      const r = await repeat(() => viewsPool.query(q.sql, q.params), runs, longMs);
      views.push({ query: q.name, form: 'read', ms: r.ms, servedMs: served.ms, rows: r.last?.rowCount, runs: r.runs, timedOut: r.timedOut || served.timedOut });
      say(`${q.name}: ${shown(served, runs, `${served.last} rows fetched`)}; through pg ${shown(r, runs, `${r.last?.rowCount} rows`)}`);
    }
    for (const f of dashboardOnly ? [] : stateFunctions(S, p)) {
      const r = await repeat(async () => (f.whole ? fetchAll(viewsPool, f.sql) : Number((await viewsPool.query(f.sql)).rows[0].count)), runs, longMs);
      functions.push({ query: f.name, ms: r.ms, [f.whole ? 'rows' : 'count']: r.last, runs: r.runs, timedOut: r.timedOut });
      say(`${f.name}: ${shown(r, runs, f.whole ? `${r.last} rows fetched` : `count ${r.last}`)}`);
    }
    await timeRequests({ dashboardPool, schema, p, runs, longMs, requests, say });
  } finally {
    await viewsPool.end();
    await dashboardPool.end();
  }
  return { picks: { contract: p.contract, customer: p.customer, currency: p.currency, day: p.day }, timeoutS: timeoutS > 0 ? timeoutS : undefined, views, functions, requests };
}

/** Every dashboard request, then the first load, into `requests`. */
async function timeRequests({ dashboardPool, schema, p, runs, longMs, requests, say }) {
  const data = createDashboardData(dashboardPool, schema);
  const revenue = createRevenueData(dashboardPool, schema);
  const request = async (name, call) => {
    const r = await repeat(call, runs, longMs);
    const bytes = r.last === undefined ? 0 : JSON.stringify(r.last).length;
    requests.push({ request: name, ms: r.ms, bytes, runs: r.runs, timedOut: r.timedOut });
    say(`dashboard ${name}: ${shown(r, runs, `${bytes} bytes of JSON`)}`);
    return r.last;
  };
  const whole = await request('/api/range', () => data.range());
  const currencies = await request('/api/currencies', () => revenue.currencies());
  if (whole) {
    if (currencies?.reporting) await request('/api/revenue (reporting currency)', () => revenue.revenue(whole, null));
    if (currencies?.currencies.length > 0) await request(`/api/revenue (${currencies.currencies[0]})`, () => revenue.revenue(whole, currencies.currencies[0]));
    await request('/api/contract-daily', () => data.contractDaily(whole));
    await request('/api/movements', () => data.movements(whole));
    await request('/api/trial-cohorts', () => data.trialCohorts(whole));
    await request('/api/episodes', () => data.episodes(whole));
    await request('/api/payments', () => data.payments(whole));
  }
  await request('/api/pipeline-health', () => data.pipelineHealth());
  for (const [what, text] of [['name', p.searches.name], ['e-mail', p.searches.email_address], ['external id', p.searches.external_customer_id]]) {
    if (text) await request(`/api/customers (${what}: ${text})`, () => searchCustomers(dashboardPool, schema, text));
  }
  if (p.contract) await request('/api/timeline (one contract)', () => data.timeline(p.contract));
  if (p.customer) await request('/api/timeline (one customer)', () => data.timeline(p.customer));
  // The first load as dashboard.js sends it: the range and the currencies at once, then the
  // revenue (in the reporting currency when fx_rates has rows, else the first currency; none
  // without one) and the six other charts' requests at once.
  await request('first load (range and currencies, then seven requests at once)', async () => {
    const [range, c] = await Promise.all([data.range(), revenue.currencies()]);
    if (!range) return undefined;
    const currency = c.reporting ? null : c.currencies[0];
    return Promise.all([
      currency === undefined ? undefined : revenue.revenue(range, currency),
      data.contractDaily(range),
      data.movements(range),
      data.trialCohorts(range),
      data.episodes(range),
      data.payments(range),
      data.pipelineHealth(),
    ]);
  });
}
