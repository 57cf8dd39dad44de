import { existsSync } from 'node:fs';
import pg from 'pg';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { SEARCH_LIMIT } from '../../src/dashboard/customer-search.js';
import { startDashboard, type RunningDashboard } from '../../src/dashboard/dashboard-server.js';
import { migrate } from '../../src/db/migrate.js';
import { quoteIdent } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { mrrDaily, mrrMovements, truthPriceBook } from '../helpers/metric-truth.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { scenarioWarehouse } from '../helpers/scenario-warehouse.js';
import { loadScenarioTruth } from '../helpers/warehouse-truth.js';

/**
 * The dashboard's revenue part against the sandbox scenario's warehouse (read-only): MRR, ARR,
 * ARPA, the MRR movements, NRR and GRR as mrr_monthly holds them, logo and revenue churn as the
 * test computes them from mrr_movements, the trial cohort table as trial_cohorts holds it, and
 * the customer search, through the JSON endpoints and on the page in Debian's chromium.
 */
const CHROMIUM = '/usr/bin/chromium';

let dashboard: RunningDashboard;
let direct: pg.Pool;
let s: string;

beforeAll(async () => {
  const wh = await scenarioWarehouse();
  s = quoteIdent(wh.schema);
  direct = new pg.Pool({ connectionString: wh.databaseUrl, max: 2 });
  const config = loadConfig({ ...inject('services'), DATABASE_SCHEMA: wh.schema, LOG_LEVEL: 'warn' });
  dashboard = await startDashboard({ log: createLogger('warn'), health: createHealth() }, config, { host: '127.0.0.1', port: 0 });
}, 300_000);
afterAll(async () => {
  await dashboard?.stop();
  await direct?.end();
});

const get = async (path: string) => {
  const res = await fetch(`${dashboard.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const rows = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => (await direct.query(sql, params)).rows as T[];
const one = async <T>(sql: string, params: unknown[] = []): Promise<T> => (await rows<T>(sql, params))[0] as T;
const numOrNull = (v: string | null) => (v === null ? null : Number(v));
const range = async () => (await get('/api/range')).body.range as { from: string; to: string };
/**
 * The currencies of the contracts with a StartDate (those the MRR views price), the most used
 * first: the page's default is the first without exchange rates.
 */
const currencies = async () =>
  (await rows<{ c: string }>(`SELECT upper(currency) AS c FROM ${s}.contract_current WHERE currency IS NOT NULL AND start_date IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1`)).map((r) => r.c);

interface RevenueBody {
  months: string[];
  mrr: (number | null)[];
  arr: (number | null)[];
  customers: (number | null)[];
  arpa: (number | null)[];
  movements: Record<string, (number | null)[]>;
  netNewMrr: (number | null)[];
  nrr: (number | null)[];
  grr: (number | null)[];
  startingCustomers: number[];
  churnedCustomers: number[];
  logoChurnPercent: (number | null)[];
  revenueChurnPercent: (number | null)[];
}

/** mrr_monthly's rows of the range's months in `currency` (null: the reporting row), keyed by YYYY-MM. */
async function monthly(from: string, to: string, currency: string | null) {
  const list = await rows<Record<string, string | null>>(
    `SELECT to_char(month, 'YYYY-MM') AS month, mrr, arr, customers, arpa, new, expansion, contraction, churn, reactivation, net_new_mrr, nrr, grr
       FROM ${s}.mrr_monthly WHERE month >= date_trunc('month', $1::date) AND month <= $2::date AND currency IS NOT DISTINCT FROM $3::text`,
    [from, to, currency],
  );
  return new Map(list.map((r) => [r.month as string, r]));
}

/** Logo and revenue churn per month of one currency, counted from mrr_movements' movement labels. */
async function churn(from: string, to: string, currency: string) {
  const list = await rows<{ month: string; starting: string; churned: string; lost: string | null; starting_mrr: string | null }>(
    `SELECT to_char(month, 'YYYY-MM') AS month, count(*) FILTER (WHERE previous_mrr > 0) AS starting, count(*) FILTER (WHERE movement = 'churn') AS churned,
            -sum(amount) FILTER (WHERE movement IN ('contraction', 'churn')) AS lost, sum(previous_mrr) AS starting_mrr
       FROM ${s}.mrr_movements WHERE month >= date_trunc('month', $1::date) AND month <= $2::date AND currency = $3 GROUP BY 1`,
    [from, to, currency],
  );
  return new Map(list.map((r) => [r.month, r]));
}

describe('the revenue endpoints', () => {
  it.each([
    ['/api/revenue?from=2025-01-01&to=2025-12-31', 'currency'],
    ['/api/revenue?from=2025-01-01&to=2025-12-31&currency=eur', 'currency'],
    ["/api/revenue?from=2025-01-01&to=2025-12-31&currency=EUR'--", 'currency'],
    ['/api/revenue?from=2025-01-01&currency=EUR', 'to'],
    ['/api/customers', 'q'],
    ['/api/customers?q=%20%20', 'q'],
    [`/api/customers?q=${'x'.repeat(101)}`, 'q'],
    ['/api/customers?q=a&q=b', 'q'],
  ])('answers %s with 400 naming %s', async (path, parameter) => {
    const { status, body } = await get(path);
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: 'bad-request', parameter });
  });

  it('runs the default range to today while a contract pays, so that the headline MRR is today\'s', async () => {
    const today = await one<{ day: string | null }>(`SELECT max(day)::text AS day FROM ${s}.mrr_daily`);
    expect(today.day).toBe(new Date().toISOString().slice(0, 10));
    expect((await range()).to).toBe(today.day);
  });

  it('names the contracts\' currencies, the most used first, and no reporting currency without exchange rates', async () => {
    const rates = await one<{ n: string }>(`SELECT count(*) AS n FROM ${s}.fx_rates`);
    expect(await get('/api/currencies')).toEqual({ status: 200, body: { currencies: await currencies(), reporting: Number(rates.n) > 0 } });
  });

  it('answers per month the MRR, ARR, customers, ARPA, movements, NRR and GRR of mrr_monthly, and the churn counted from mrr_movements, over the whole range and a third of it', async () => {
    const whole = await range();
    const third = await one<{ from: string; to: string }>(`SELECT ($1::date + ($2::date - $1::date) / 3)::text AS from, ($2::date - ($2::date - $1::date) / 3)::text AS to`, [whole.from, whole.to]);
    const codes = await currencies();
    expect(codes.length).toBeGreaterThan(1);
    let churned = 0;
    for (const r of [whole, third]) {
      for (const currency of codes) {
        const { status, body } = await get(`/api/revenue?from=${r.from}&to=${r.to}&currency=${currency}`);
        expect(status).toBe(200);
        const got = body as unknown as RevenueBody;
        const months = await rows<{ m: string }>(`SELECT to_char(g, 'YYYY-MM') AS m FROM generate_series(date_trunc('month', $1::date), $2::date, interval '1 month') AS g ORDER BY g`, [r.from, r.to]);
        expect(got.months).toEqual(months.map((m) => m.m));
        const want = await monthly(r.from, r.to, currency);
        expect([...want.values()].some((m) => Number(m.mrr) > 0), currency).toBe(true);
        const col = (k: string) => got.months.map((m) => numOrNull(want.get(m)?.[k] ?? null));
        expect(got.mrr, currency).toEqual(col('mrr'));
        expect(got.arr, currency).toEqual(col('arr'));
        expect(got.customers, currency).toEqual(col('customers'));
        expect(got.arpa, currency).toEqual(col('arpa'));
        for (const k of ['new', 'expansion', 'contraction', 'churn', 'reactivation']) expect(got.movements[k], `${currency} ${k}`).toEqual(col(k));
        expect(got.netNewMrr, currency).toEqual(col('net_new_mrr'));
        expect(got.nrr, currency).toEqual(col('nrr'));
        expect(got.grr, currency).toEqual(col('grr'));
        const c = await churn(r.from, r.to, currency);
        expect(got.startingCustomers, currency).toEqual(got.months.map((m) => Number(c.get(m)?.starting ?? 0)));
        expect(got.churnedCustomers, currency).toEqual(got.months.map((m) => Number(c.get(m)?.churned ?? 0)));
        for (const [i, m] of got.months.entries()) {
          const x = c.get(m);
          const logo = x && Number(x.starting) > 0 ? (100 * Number(x.churned)) / Number(x.starting) : null;
          const revenue = x && Number(x.starting_mrr) > 0 ? (100 * Number(x.lost ?? 0)) / Number(x.starting_mrr) : null;
          if (logo === null) expect(got.logoChurnPercent[i], `${currency} ${m}`).toBeNull();
          else expect(got.logoChurnPercent[i], `${currency} ${m}`).toBeCloseTo(logo, 9);
          if (revenue === null) expect(got.revenueChurnPercent[i], `${currency} ${m}`).toBeNull();
          else expect(got.revenueChurnPercent[i], `${currency} ${m}`).toBeCloseTo(revenue, 9);
          churned += Number(x?.churned ?? 0);
        }
      }
    }
    // The scenario exercises churn, so the rates above were not all zero.
    expect(churned).toBeGreaterThan(0);
  });

  it('answers the logo and revenue churn the sandbox\'s truth gives, computed from the simulator\'s contracts and prices', async () => {
    const whole = await range();
    const truth = await loadScenarioTruth(direct, (await scenarioWarehouse()).schema);
    const now = new Date();
    const movements = mrrMovements(mrrDaily(truth, now, truthPriceBook(truth)), now);
    let compared = 0;
    for (const currency of await currencies()) {
      const got = (await get(`/api/revenue?from=${whole.from}&to=${whole.to}&currency=${currency}`)).body as unknown as RevenueBody;
      for (const [i, month] of got.months.entries()) {
        const rows = movements.filter((m) => m.currency === currency && m.month.slice(0, 7) === month);
        const starting = rows.filter((m) => m.previous_mrr > 0);
        const churned = rows.filter((m) => m.movement === 'churn').length;
        const base = starting.reduce((a, m) => a + m.previous_mrr, 0);
        const lost = -rows.filter((m) => m.movement === 'churn' || m.movement === 'contraction').reduce((a, m) => a + m.amount, 0);
        expect([got.startingCustomers[i], got.churnedCustomers[i]], `${currency} ${month}`).toEqual([starting.length, churned]);
        if (starting.length === 0) expect(got.logoChurnPercent[i]).toBeNull();
        else expect(got.logoChurnPercent[i], `${currency} ${month}`).toBeCloseTo((100 * churned) / starting.length, 9);
        if (base === 0) expect(got.revenueChurnPercent[i]).toBeNull();
        else expect(got.revenueChurnPercent[i], `${currency} ${month}`).toBeCloseTo((100 * lost) / base, 6);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(0);
  });

  it('answers the reporting currency as mrr_monthly\'s all-currency row: its amounts NULL in a month with a currency that has no rate', async () => {
    const whole = await range();
    const got = (await get(`/api/revenue?from=${whole.from}&to=${whole.to}&currency=reporting`)).body as unknown as RevenueBody;
    const want = await monthly(whole.from, whole.to, null);
    expect(got.mrr).toEqual(got.months.map((m) => numOrNull(want.get(m)?.mrr ?? null)));
    expect(got.customers).toEqual(got.months.map((m) => numOrNull(want.get(m)?.customers ?? null)));
    expect(got.customers.some((n) => (n ?? 0) > 0)).toBe(true);
  });

  it('finds customers whose name, e-mail or external id contains the text, in any letter case', async () => {
    const all = await rows<{ id: string; company_name: string | null; customer_name: string | null; first_name: string | null; last_name: string | null; email_address: string | null; external_customer_id: string | null }>(
      `SELECT resource_id AS id, company_name, customer_name, first_name, last_name, email_address, external_customer_id FROM ${s}.customer_current`,
    );
    const sample = all.find((c) => c.company_name && c.email_address && c.external_customer_id);
    expect(sample, 'a customer with a company name, an e-mail address and an external id').toBeDefined();
    const texts = [sample!.company_name!.slice(1, -1).toUpperCase(), sample!.email_address!.split('@')[0]!.toUpperCase(), sample!.external_customer_id!.slice(-6).toLowerCase(), sample!.id];
    for (const text of texts) {
      const { status, body } = await get(`/api/customers?q=${encodeURIComponent(text)}`);
      expect(status, text).toBe(200);
      const found = body as { customers: { id: string }[]; more: boolean };
      const has = (v: string | null) => v !== null && v.toLowerCase().includes(text.toLowerCase());
      const want = all.filter((c) => [c.company_name, c.customer_name, [c.first_name, c.last_name].filter(Boolean).join(' ') || null, c.email_address, c.external_customer_id, c.id].some(has)).map((c) => c.id);
      expect(want, text).toContain(sample!.id);
      expect(found.customers.length, text).toBe(Math.min(want.length, SEARCH_LIMIT));
      expect(found.more, text).toBe(want.length > SEARCH_LIMIT);
      for (const c of found.customers) expect(want, text).toContain(c.id);
      if (want.length <= SEARCH_LIMIT) expect(found.customers.map((c) => c.id), text).toContain(sample!.id);
    }
    // A LIKE wildcard in the text is a character, not a wildcard.
    expect(((await get('/api/customers?q=%25')).body as { customers: unknown[] }).customers.length).toBe(all.filter((c) => [c.company_name, c.email_address, c.external_customer_id].some((v) => v?.includes('%'))).length);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('the revenue part of the page in chromium', () => {
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  let whole: { from: string; to: string };

  const loaded = (r: { from: string; to: string }, currency: string) =>
    page.waitForFunction(([want, cur]) => {
      const body = (globalThis as unknown as InPage).document.body;
      return body.dataset.loaded === want && body.dataset.currency === cur;
    }, [`${r.from}..${r.to}`, currency] as const, { timeout: 30_000 });
  const chartData = (id: string) =>
    page.evaluate((canvasId) => {
      const { Chart, document } = globalThis as unknown as InPage;
      const chart = Chart.getChart(document.getElementById(canvasId));
      return chart ? { labels: chart.data.labels, datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })) } : null;
    }, id);
  const text = (id: string) => page.locator(`#${id}`).innerText();
  /** A figure as the page prints it ("1,234.50 EUR", "12.5 %"), back to a number. */
  const figure = async (id: string) => Number((await text(id)).replace(/[^0-9.-]/g, ''));

  beforeAll(async () => {
    whole = await range();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
    await page.goto(`${dashboard.url}/`);
    await loaded(whole, (await currencies())[0]!);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('leads with revenue: its figures above the operations ones', async () => {
    const top = async (sel: string) => (await page.locator(sel).boundingBox())!.y;
    expect(await top('#kpi-mrr')).toBeLessThan(await top('#kpi-active'));
    expect(await top('#chart-mrr')).toBeLessThan(await top('#chart-status'));
    expect(problems).toEqual([]);
  });

  it('shows the last month\'s MRR, ARR, customers, ARPA, NRR and churn as the views hold them, in the most used currency', async () => {
    const currency = (await currencies())[0]!;
    expect(await page.inputValue('#currency')).toBe(currency);
    const want = await monthly(whole.from, whole.to, currency);
    const last = [...want.keys()].sort().at(-1)!;
    const m = want.get(last)!;
    expect(await text('revenue-month')).toBe(`in ${last}`);
    expect(await text('kpi-mrr')).toMatch(new RegExp(` ${currency}$`));
    expect(await figure('kpi-mrr')).toBeCloseTo(Number(m.mrr), 2);
    expect(await figure('kpi-arr')).toBeCloseTo(Number(m.arr), 2);
    expect(await figure('kpi-customers')).toBe(Number(m.customers));
    expect(await figure('kpi-arpa')).toBeCloseTo(Number(m.arpa), 2);
    if (m.nrr === null) expect(await text('kpi-nrr')).toBe('n/a');
    else expect(await figure('kpi-nrr')).toBeCloseTo(100 * Number(m.nrr), 1);
    const c = (await churn(whole.from, whole.to, currency)).get(last);
    if (!c || Number(c.starting) === 0) expect(await text('kpi-logo-churn')).toBe('n/a');
    else {
      expect(await figure('kpi-logo-churn')).toBeCloseTo((100 * Number(c.churned)) / Number(c.starting), 1);
      expect(await text('kpi-logo-churn-sub')).toBe(`${c.churned} of ${c.starting} customers`);
      expect(await figure('kpi-revenue-churn')).toBeCloseTo((100 * Number(c.lost ?? 0)) / Number(c.starting_mrr), 1);
    }
  });

  it('charts MRR, ARR and the movements month by month as mrr_monthly holds them', async () => {
    const currency = await page.inputValue('#currency');
    const want = await monthly(whole.from, whole.to, currency);
    const mrr = (await chartData('chart-mrr'))!;
    const col = (k: string) => mrr.labels.map((l) => numOrNull(want.get(l)?.[k] ?? null));
    expect(mrr.labels[0]).toBe(whole.from.slice(0, 7));
    expect(mrr.labels.at(-1)).toBe(whole.to.slice(0, 7));
    expect(mrr.datasets.find((d) => d.label === 'MRR')!.data).toEqual(col('mrr'));
    expect(mrr.datasets.find((d) => d.label === 'ARR')!.data).toEqual(col('arr'));
    const movements = (await chartData('chart-mrr-movements'))!;
    for (const [label, k] of [['New', 'new'], ['Expansion', 'expansion'], ['Reactivation', 'reactivation'], ['Contraction', 'contraction'], ['Churn', 'churn'], ['Net new MRR', 'net_new_mrr']]) {
      expect(movements.datasets.find((d) => d.label === label)!.data, label).toEqual(col(k!));
    }
    // Money that goes is drawn below the axis.
    expect(movements.datasets.find((d) => d.label === 'Churn')!.data.some((v) => (v ?? 0) < 0)).toBe(true);
  });

  it('lists the trial cohorts of the range as trial_cohorts holds them, the newest first (the scenario has one cohort: the order is not exercised)', async () => {
    const want = await rows<{ month: string; trials: string; converted: string; still_in_trial: string; not_converted: string }>(
      `SELECT to_char(cohort_month, 'YYYY-MM') AS month, trials, converted, still_in_trial, not_converted FROM ${s}.trial_cohorts
        WHERE cohort_month BETWEEN date_trunc('month', $1::date) AND $2::date ORDER BY cohort_month DESC`,
      [whole.from, whole.to],
    );
    expect(want.length).toBeGreaterThan(0);
    const shown = await page.$$eval('#cohort-table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(shown).toEqual(
      want.map((r) => [r.month, r.trials, r.converted, `${((100 * Number(r.converted)) / Number(r.trials)).toLocaleString('en', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} %`, r.still_in_trial, r.not_converted]),
    );
  });

  it('redraws the revenue in another currency', async () => {
    const other = (await currencies())[1]!;
    await page.selectOption('#currency', other);
    await loaded(whole, other);
    const want = await monthly(whole.from, whole.to, other);
    const mrr = (await chartData('chart-mrr'))!;
    expect(mrr.datasets.find((d) => d.label === 'MRR')!.data).toEqual(mrr.labels.map((l) => numOrNull(want.get(l)?.mrr ?? null)));
    expect(await text('kpi-mrr')).toMatch(new RegExp(` ${other}$`));
    expect(problems).toEqual([]);
  });

  it("finds a customer by e-mail and opens its timeline", async () => {
    const c = await one<{ id: string; email: string; versions: string }>(
      `SELECT c.resource_id AS id, c.email_address AS email, (SELECT count(*) FROM ${s}.customer_history h WHERE h.resource_id = c.resource_id) AS versions
         FROM ${s}.customer_current c WHERE c.email_address IS NOT NULL ORDER BY c.resource_id LIMIT 1`,
    );
    await page.fill('#customer-text', c.email.toUpperCase());
    await page.click('#customer-search button[type=submit]');
    await page.waitForSelector(`#customer-table tr[data-id="${c.id}"]`);
    await page.click(`#customer-table tr[data-id="${c.id}"] a`);
    await expect.poll(() => page.locator('#timeline-title').innerText().catch(() => '')).toContain(`Customer ${c.id}`);
    expect(await page.locator('#timeline-table tbody tr').count()).toBe(Number(c.versions));
    await page.fill('#customer-text', 'no-such-customer-0000');
    await page.click('#customer-search button[type=submit]');
    await page.waitForSelector('#customer-none');
    expect(problems).toEqual([]);
  });
});

describe.skipIf(!existsSync(CHROMIUM))('with exchange rates', () => {
  // The scenario's warehouse is read-only for its users: its versions copied into a schema of
  // this test's own, where the analyst's rates can be entered.
  const schema = `dash_rates_${uniqueSuffix()}`;
  const r = quoteIdent(schema);
  let rated: RunningDashboard;
  let browser: Browser;

  beforeAll(async () => {
    const wh = await scenarioWarehouse();
    await migrate(direct, { schema, log: silentLogger });
    const columns = 'resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset, loaded_at';
    await direct.query(`INSERT INTO ${r}.resource_versions (${columns}) SELECT ${columns} FROM ${quoteIdent(wh.schema)}.resource_versions ORDER BY resource_type, resource_id, version`);
    await direct.query(`INSERT INTO ${r}.fx_rates (currency, valid_from, rate_to_reporting) VALUES ('EUR', '2024-01-01', 1), ('CHF', '2024-01-01', 1.04), ('CHF', '2025-03-01', 1.07), ('USD', '2024-01-01', 0.92)`);
    const config = loadConfig({ ...inject('services'), DATABASE_SCHEMA: schema, LOG_LEVEL: 'warn' });
    rated = await startDashboard({ log: createLogger('warn'), health: createHealth() }, config, { host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await rated?.stop();
    await direct.query(`DROP SCHEMA IF EXISTS ${r} CASCADE`);
  });

  it('opens in the reporting currency, its figures those of mrr_monthly\'s all-currency row', async () => {
    expect(((await (await fetch(`${rated.url}/api/currencies`)).json()) as { reporting: boolean }).reporting).toBe(true);
    const whole = ((await (await fetch(`${rated.url}/api/range`)).json()) as { range: { from: string; to: string } }).range;
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('response', (res) => res.status() >= 400 && problems.push(`HTTP ${res.status()}: ${res.url()}`));
    await page.goto(`${rated.url}/`);
    await page.waitForFunction(([want, cur]) => {
      const body = (globalThis as unknown as InPage).document.body;
      return body.dataset.loaded === want && body.dataset.currency === cur;
    }, [`${whole.from}..${whole.to}`, 'reporting'] as const, { timeout: 30_000 });
    const want = await rows<{ month: string; mrr: string | null; arr: string | null; arpa: string | null }>(
      `SELECT to_char(month, 'YYYY-MM') AS month, mrr, arr, arpa FROM ${r}.mrr_monthly WHERE currency IS NULL AND month <= $1::date ORDER BY month DESC LIMIT 1`,
      [whole.to],
    );
    const last = want[0]!;
    expect(Number(last.mrr)).toBeGreaterThan(0);
    const text = (id: string) => page.locator(`#${id}`).innerText();
    expect(await text('revenue-month')).toBe(`in ${last.month}`);
    expect(await text('kpi-mrr')).toMatch(/^[0-9,]+\.[0-9]{2}$/);
    expect(Number((await text('kpi-mrr')).replace(/,/g, ''))).toBeCloseTo(Number(last.mrr), 2);
    expect(Number((await text('kpi-arr')).replace(/,/g, ''))).toBeCloseTo(Number(last.arr), 2);
    expect(Number((await text('kpi-arpa')).replace(/,/g, ''))).toBeCloseTo(Number(last.arpa), 2);
    expect(problems).toEqual([]);
    await page.close();
  });
});

/** What the page offers the functions above: the document, and chart.js's global. */
interface InPage {
  document: { body: { dataset: Record<string, string | undefined> }; getElementById(id: string): unknown };
  Chart: { getChart(canvas: unknown): { data: { labels: string[]; datasets: { label: string; data: (number | null)[] }[] } } | undefined };
}
