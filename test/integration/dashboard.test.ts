import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DASHBOARD_WORK_MEM } from '../../src/dashboard/analyst-pool.js';
import { startDashboard, type RunningDashboard } from '../../src/dashboard/dashboard-server.js';
import { quoteIdent } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';
import { runCli } from '../helpers/cli.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { scenarioWarehouse } from '../helpers/scenario-warehouse.js';
import { waitFor } from '../helpers/wait-for.js';
import { freePort } from '../helpers/free-port.js';

/**
 * `billing-loader dashboard` against the sandbox scenario's warehouse (read-only): its JSON
 * endpoints' refusals, its analyst-only access, and the page itself in Debian's chromium, whose
 * charts must show what the metric views hold.
 */
const CHROMIUM = '/usr/bin/chromium';
const CHARTS = ['chart-status', 'chart-plan', 'chart-movements', 'chart-cohorts', 'chart-episodes', 'chart-payments', 'chart-pipeline'];

let dashboard: RunningDashboard;
let direct: pg.Pool;
let s: string;
let schema: string;

beforeAll(async () => {
  const wh = await scenarioWarehouse();
  schema = wh.schema;
  s = quoteIdent(wh.schema);
  direct = new pg.Pool({ connectionString: wh.databaseUrl, max: 2 });
  const config = loadConfig({ ...inject('services'), DATABASE_SCHEMA: wh.schema, LOG_LEVEL: 'warn' });
  dashboard = await startDashboard({ log: createLogger('warn'), health: createHealth() }, config, { host: '127.0.0.1', port: 0 });
}, 300_000); // the first file of a run to ask fills the scenario's warehouse: minutes on a busy machine
afterAll(async () => {
  await dashboard?.stop();
  await direct?.end();
});

const get = async (path: string) => {
  const res = await fetch(`${dashboard.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const one = async <T>(sql: string, params: unknown[] = []): Promise<T> => (await direct.query(sql, params)).rows[0] as T;
/** The default range: the first StartDate to the latest contract date that has happened, the days of payment_outcomes, and today while a contract runs. */
const wholeRange = () =>
  one<{ from: string; to: string }>(
    `SELECT least((SELECT min((start_date AT TIME ZONE 'UTC')::date) FROM ${s}.contract_current), (SELECT min(day) FROM ${s}.payment_outcomes))::text AS from,
            greatest((SELECT (max(d) AT TIME ZONE 'UTC')::date FROM ${s}.contract_current CROSS JOIN unnest(ARRAY[start_date, end_date]) AS d WHERE d <= now()),
                     (SELECT max(day) FROM ${s}.payment_outcomes),
                     (SELECT (now() AT TIME ZONE 'UTC')::date FROM ${s}.contract_current WHERE start_date <= now() AND (end_date IS NULL OR end_date > now()) LIMIT 1))::text AS to`,
  );
/**
 * The middle third of the days with contract changes or payments (the whole range without its
 * quiet tail to today): a part of the range that cuts days off both ends and still holds data.
 */
const middleThird = async (whole: { from: string }) => {
  const end = await one<{ to: string }>(
    `SELECT greatest((SELECT (max(d) AT TIME ZONE 'UTC')::date FROM ${s}.contract_current CROSS JOIN unnest(ARRAY[start_date, end_date]) AS d WHERE d <= now()), (SELECT max(day) FROM ${s}.payment_outcomes))::text AS to`,
  );
  return one<{ from: string; to: string }>(`SELECT ($1::date + ($2::date - $1::date) / 3)::text AS from, ($2::date - ($2::date - $1::date) / 3)::text AS to`, [whole.from, end.to]);
};

describe('dashboard HTTP', () => {
  it('answers /healthz, and /readyz once the warehouse answers to the analyst role', async () => {
    expect(await get('/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await get('/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
  });

  it.each([
    ['/api/movements?from=2025-13-01&to=2025-12-31', 'from'],
    ['/api/movements?from=2025-02-30&to=2025-12-31', 'from'],
    ['/api/contract-daily?from=2025-01-01', 'to'],
    ['/api/payments?from=2025-03-01&to=2025-02-01', 'to'],
    ['/api/episodes?from=1990-01-01&to=2025-01-01', 'to'],
    ["/api/trial-cohorts?from=2025-01-01'--&to=2025-02-01", 'from'],
    ['/api/timeline?id=abc%27%3B%20drop', 'id'],
    ['/api/timeline', 'id'],
    ['/api/timeline?id=a&id=b', 'id'],
  ])('answers %s with 400 naming %s', async (path, parameter) => {
    const { status, body } = await get(path);
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: 'bad-request', parameter });
    expect(body.message).toMatch(new RegExp(`^${parameter}: `));
  });

  it('is not ready on a schema without the metric views, and says which are missing', async () => {
    const health = createHealth();
    const config = loadConfig({ ...inject('services'), DATABASE_SCHEMA: `missing_${uniqueSuffix()}` });
    const other = await startDashboard({ log: silentLogger, health }, config, { host: '127.0.0.1', port: 0 });
    try {
      expect((await fetch(`${other.url}/readyz`)).status).toBe(503);
      expect((await health.readiness()).checks.database?.reason).toMatch(/lacks contract_daily, subscription_movements, .*: run billing-loader migrate$/);
    } finally {
      await other.stop();
    }
  });

  it('answers the pipeline health of the 24 hours up to the latest minute pipeline_health has, as the view counts them', async () => {
    const { status, body } = await get('/api/pipeline-health');
    expect(status).toBe(200);
    const health = body as { minutes: string[]; webhooks: (number | null)[]; versions: (number | null)[]; deadLetters: (number | null)[] };
    const rows = (await direct.query<{ minute: string; webhooks: string; versions: string; dead_letters: string }>(
      `SELECT to_char(minute, 'YYYY-MM-DD HH24:MI') AS minute, webhooks, versions, dead_letters FROM ${s}.pipeline_health
        WHERE minute > (SELECT max(minute) FROM ${s}.pipeline_health) - interval '24 hours' ORDER BY minute`,
    )).rows;
    expect(rows.length).toBeGreaterThan(0);
    expect(health.minutes).toEqual(rows.map((r) => r.minute));
    expect(health.webhooks).toEqual(rows.map((r) => Number(r.webhooks)));
    expect(health.versions).toEqual(rows.map((r) => Number(r.versions)));
    expect(health.deadLetters).toEqual(rows.map((r) => Number(r.dead_letters)));
  });

  it('answers the span of the contract dates and payment_outcomes, to today while a contract runs, as the range, and over it and a part of it the episodes and contracts the views hold', async () => {
    const whole = await wholeRange();
    expect(await get('/api/range')).toEqual({ status: 200, body: { range: whole } });
    // It starts where contract_daily starts (payments began later in the scenario).
    expect(whole.from).toBe((await one<{ d: string }>(`SELECT min(day)::text AS d FROM ${s}.contract_daily`)).d);
    const third = await middleThird(whole);
    for (const range of [whole, third]) {
      const params = [range.from, range.to];
      // Episodes: each figure and week counted by its own query of the view.
      const episodes = (await get(`/api/episodes?from=${range.from}&to=${range.to}`)).body as Record<string, unknown>;
      const weeks = (await direct.query<{ week: string; dunning: string; escalation: string }>(
        `SELECT w::date::text AS week,
                (SELECT count(*) FROM ${s}.dunning_episodes e WHERE (e.started_at AT TIME ZONE 'UTC')::date BETWEEN greatest(w::date, $1::date) AND least(w::date + 6, $2::date)) AS dunning,
                (SELECT count(*) FROM ${s}.payment_escalation_episodes e WHERE (e.started_at AT TIME ZONE 'UTC')::date BETWEEN greatest(w::date, $1::date) AND least(w::date + 6, $2::date)) AS escalation
           FROM generate_series(date_trunc('week', $1::date), $2::date, interval '1 week') AS w ORDER BY w`,
        params,
      )).rows;
      expect(episodes.weeks).toEqual(weeks.map((w) => w.week));
      expect(episodes.dunningStarted).toEqual(weeks.map((w) => Number(w.dunning)));
      expect(episodes.escalationStarted).toEqual(weeks.map((w) => Number(w.escalation)));
      for (const [key, view] of [['dunning', 'dunning_episodes'], ['escalation', 'payment_escalation_episodes']] as const) {
        const f = await one<{ open_now: string; started: string; resolved: string; median: number | null }>(
          `SELECT (SELECT count(*) FROM ${s}.${view} WHERE outcome = 'open') AS open_now, count(*) AS started, count(*) FILTER (WHERE outcome <> 'open') AS resolved,
                  round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM duration) / 3600) FILTER (WHERE outcome <> 'open'))::numeric, 1)::float8 AS median
             FROM ${s}.${view} WHERE (started_at AT TIME ZONE 'UTC')::date BETWEEN $1::date AND $2::date`,
          params,
        );
        expect(episodes[key], `${view} ${range.from}..${range.to}`).toEqual({ openNow: Number(f.open_now), started: Number(f.started), resolved: Number(f.resolved), medianResolutionHours: f.median });
      }
      // Contracts: per status summed over the plans, and per plan the running ones.
      const daily = (await get(`/api/contract-daily?from=${range.from}&to=${range.to}`)).body as { days: string[]; byStatus: Record<string, (number | null)[]>; byPlan: { planId: string; values: (number | null)[] }[] };
      const statuses = (await direct.query<{ day: string; active: string; ended: string }>(`SELECT day::text AS day, sum(active) AS active, sum(ended) AS ended FROM ${s}.contract_daily WHERE day BETWEEN $1 AND $2 GROUP BY day`, params)).rows;
      expect(statuses.length).toBeGreaterThan(0);
      for (const r of statuses) {
        const i = daily.days.indexOf(r.day);
        expect([daily.byStatus.active?.[i], daily.byStatus.ended?.[i]], r.day).toEqual([Number(r.active), Number(r.ended)]);
      }
      const plans = (await direct.query<{ plan: string; total: string }>(
        `SELECT coalesce(plan_id, '(none)') AS plan, sum(in_trial + active + cancelled_running) AS total FROM ${s}.contract_daily WHERE day BETWEEN $1 AND $2 GROUP BY 1 HAVING sum(in_trial + active + cancelled_running) > 0 ORDER BY 1`,
        params,
      )).rows;
      expect(daily.byPlan.map((p) => [p.planId, p.values.reduce<number>((a, v) => a + (v ?? 0), 0)]).sort()).toEqual(plans.map((p) => [p.plan, Number(p.total)]).sort());
    }
  });

  it("answers a customer's timeline: its versions in order with their changes, and its contracts", async () => {
    // The customer with the most versions among those with a contract in the warehouse (a deleted
    // customer's contracts are deleted with it, and may be gone before the loader ever read them).
    const { id } = await one<{ id: string }>(
      `SELECT h.resource_id AS id FROM ${s}.customer_history h WHERE EXISTS (SELECT 1 FROM ${s}.contract_history c WHERE c.customer_id = h.resource_id) GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`,
    );
    const { status, body } = await get(`/api/timeline?id=${id}`);
    expect(status).toBe(200);
    const versions = (await direct.query<{ version: number }>(`SELECT version FROM ${s}.customer_history WHERE resource_id = $1 ORDER BY version`, [id])).rows;
    const timeline = body as { type: string; versions: { version: number; changes: { field: string }[] }[]; related: { type: string; id: string }[] };
    expect(timeline.type).toBe('Customer');
    expect(timeline.versions.map((v) => v.version)).toEqual(versions.map((v) => v.version));
    const changes = await one<{ n: string }>(`SELECT count(*) AS n FROM ${s}.customer_changes WHERE resource_id = $1`, [id]);
    expect(timeline.versions.reduce((n, v) => n + v.changes.length, 0)).toBe(Number(changes.n));
    const contracts = (await direct.query<{ id: string }>(`SELECT DISTINCT resource_id AS id FROM ${s}.contract_history WHERE customer_id = $1 ORDER BY 1`, [id])).rows;
    expect(contracts.length).toBeGreaterThan(0);
    expect(timeline.related).toEqual(contracts.map((c) => ({ type: 'Contract', id: c.id })));
  });

  it('answers 404 for an id no resource has, and for an unknown path', async () => {
    expect(await get('/api/timeline?id=no-such-resource-0000')).toMatchObject({ status: 404, body: { error: 'not-found' } });
    expect(await get('/api/nothing-here')).toMatchObject({ status: 404, body: { error: 'not-found' } });
  });

  it('reads as billing_loader_analyst in read-only transactions: a write through its pool fails, even with the owner\'s URL', async () => {
    const { rows } = await dashboard.pool.query<{ who: string; ro: string; mem: string }>(`SELECT current_user AS who, current_setting('transaction_read_only') AS ro, current_setting('work_mem') AS mem`);
    expect(rows[0]).toEqual({ who: 'billing_loader_analyst', ro: 'on', mem: DASHBOARD_WORK_MEM });
    const insert = `INSERT INTO ${s}.webhook_events (event_id, event, received_at, payload) VALUES (gen_random_uuid(), 'ContractChanged', now(), '{}')`;
    await expect(dashboard.pool.query(insert)).rejects.toMatchObject({ code: '25006' }); // read-only transaction
    // A read-write transaction asked for explicitly still meets the role's privileges.
    const client = await dashboard.pool.connect();
    try {
      await client.query('BEGIN READ WRITE');
      await expect(client.query(insert)).rejects.toMatchObject({ code: '42501' });
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
  it('is not ready when its login may not act as billing_loader_analyst, and reads nothing', async () => {
    const role = `dash_${uniqueSuffix()}`;
    await direct.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw-${role}'`);
    const url = new URL(inject('services').DATABASE_URL);
    [url.username, url.password] = [role, `pw-${role}`];
    const config = loadConfig({ ...inject('services'), DATABASE_SCHEMA: schema, DASHBOARD_DATABASE_URL: url.toString() });
    const health = createHealth();
    const other = await startDashboard({ log: silentLogger, health }, config, { host: '127.0.0.1', port: 0 });
    try {
      expect((await fetch(`${other.url}/readyz`)).status).toBe(503);
      expect((await health.readiness()).checks.database?.reason).toMatch(/permission denied to set role "billing_loader_analyst"/);
      expect((await fetch(`${other.url}/api/range`)).status).toBe(500);
    } finally {
      await other.stop();
      await direct.query(`DROP ROLE ${role}`);
    }
  });
});

describe('billing-loader dashboard', () => {
  it('documents its settings in --help', async () => {
    const help = await runCli(['dashboard', '--help'], {}, 30_000);
    expect(help.code).toBe(0);
    for (const v of ['DASHBOARD_PORT', 'DASHBOARD_DATABASE_URL', 'DATABASE_SCHEMA', 'OPS_PORT']) expect(help.stdout).toContain(`  ${v} `);
    expect(help.stdout).toContain('billing_loader_analyst');
  });

  it('serves on DASHBOARD_PORT, and on SIGTERM stops and exits 0', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'dashboard'], {
      cwd: packageRoot,
      env: { ...process.env, ...inject('services'), DATABASE_SCHEMA: schema, DASHBOARD_PORT: String(port), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, { what: 'dashboard ready', timeoutMs: 30_000, intervalMs: 200 });
      expect((await fetch(`http://127.0.0.1:${port}/`)).headers.get('content-type')).toMatch(/^text\/html/);
      expect((await fetch(`http://127.0.0.1:${port}/assets/chart.umd.js`)).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited, stderr).toBe(0);
      expect(stderr).toContain('"msg":"stopped"');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe.skipIf(!existsSync(CHROMIUM))('the page in chromium', () => {
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  let whole: { from: string; to: string };

  // Playwright runs these functions in the page (the project compiles without the DOM's types).
  const loaded = (range: { from: string; to: string }, on: Page = page) => on.waitForFunction((want) => (globalThis as unknown as InPage).document.body.dataset.loaded === want, `${range.from}..${range.to}`, { timeout: 20_000 });
  const chartData = (id: string) =>
    page.evaluate((canvasId) => {
      const { Chart, document } = globalThis as unknown as InPage;
      const chart = Chart.getChart(document.getElementById(canvasId));
      return chart ? { labels: chart.data.labels, datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })) } : null;
    }, id);
  const sumOf = (d: { datasets: { data: (number | null)[] }[] }) => d.datasets.reduce((a, ds) => a + ds.data.reduce<number>((x, y) => x + (y ?? 0), 0), 0);
  const text = (id: string) => page.locator(`#${id}`).innerText();

  beforeAll(async () => {
    whole = await wholeRange();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
    await page.goto(`${dashboard.url}/`);
    await loaded(whole);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('loads with no console error and no failed request, over the span of the data by default', async () => {
    expect(await page.inputValue('#from')).toBe(whole.from);
    expect(await page.inputValue('#to')).toBe(whole.to);
    expect(problems).toEqual([]);
  });

  it('has data in every chart', async () => {
    for (const id of CHARTS) {
      const d = await chartData(id);
      expect(d, id).not.toBeNull();
      expect(d!.labels.length, id).toBeGreaterThan(0);
      expect(sumOf(d!), id).toBeGreaterThan(0);
    }
  });

  it('shows the figures the metric views hold: active contracts, movements in the range, payment success rate', async () => {
    // On the range's last day that contract_daily covers.
    const active = await one<{ n: string; day: string }>(`SELECT sum(active) AS n, day::text FROM ${s}.contract_daily WHERE day = (SELECT max(day) FROM ${s}.contract_daily WHERE day <= $1) GROUP BY day`, [whole.to]);
    expect(Number(active.n)).toBeGreaterThan(0);
    expect(await text('kpi-active')).toBe(Number(active.n).toLocaleString('en'));
    expect(await text('kpi-active-day')).toBe(`on ${active.day}`);
    const movements = await one<{ n: string }>(`SELECT sum(contracts) AS n FROM ${s}.subscription_movements WHERE day BETWEEN $1 AND $2`, [whole.from, whole.to]);
    expect(Number(movements.n)).toBeGreaterThan(0);
    expect(await text('kpi-movements')).toBe(Number(movements.n).toLocaleString('en'));
    expect(sumOf((await chartData('chart-movements'))!)).toBe(Number(movements.n));
    const pay = await one<{ rate: string }>(`SELECT round(100.0 * sum(succeeded) / sum(succeeded + failed), 1)::text AS rate FROM ${s}.payment_outcomes WHERE day BETWEEN $1 AND $2`, [whole.from, whole.to]);
    expect(await text('kpi-success')).toBe(`${Number(pay.rate)} %`);
  });

  it('redraws the time charts for a new date range', async () => {
    const span = await middleThird(whole);
    const before = await chartData('chart-movements');
    await page.fill('#from', span.from);
    await page.fill('#to', span.to);
    await loaded(span);
    const movements = (await chartData('chart-movements'))!;
    const days = await one<{ n: number }>(`SELECT ($2::date - $1::date + 1) AS n`, [span.from, span.to]);
    expect(movements.labels).toHaveLength(days.n);
    expect([movements.labels[0], movements.labels.at(-1)]).toEqual([span.from, span.to]);
    expect(movements.labels.length).toBeLessThan(before!.labels.length);
    const want = await one<{ n: string | null }>(`SELECT sum(contracts) AS n FROM ${s}.subscription_movements WHERE day BETWEEN $1 AND $2`, [span.from, span.to]);
    expect(sumOf(movements)).toBe(Number(want.n ?? 0));
    const status = (await chartData('chart-status'))!;
    const active = await one<{ n: string }>(`SELECT sum(active) AS n FROM ${s}.contract_daily WHERE day = (SELECT max(day) FROM ${s}.contract_daily WHERE day <= $1)`, [span.to]);
    expect(status.datasets.find((d) => d.label === 'Active')?.data.filter((v) => v !== null).at(-1)).toBe(Number(active.n));
    expect(await text('kpi-active')).toBe(Number(active.n).toLocaleString('en'));
    const payments = (await chartData('chart-payments'))!;
    const paid = await one<{ n: string | null }>(`SELECT sum(succeeded + failed) AS n FROM ${s}.payment_outcomes WHERE day BETWEEN $1 AND $2`, [span.from, span.to]);
    expect(sumOf(payments)).toBe(Number(paid.n ?? 0));
    expect(problems).toEqual([]);
  });

  it('draws the range on screen when an answer for an earlier range arrives after it', async () => {
    // The range the previous test left, widened in two steps: the first step's movements answer
    // is held until the second step has loaded, then let through.
    const from = await page.inputValue('#from');
    const to = await page.inputValue('#to');
    expect([from, to]).not.toEqual([whole.from, whole.to]);
    const heldUrl = (u: string) => u.includes('/api/movements?') && u.includes(`from=${whole.from}`) && u.includes(`to=${to}`);
    const matcher = (u: URL) => heldUrl(u.toString());
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route(matcher, async (route) => {
      await held;
      await route.continue();
    });
    try {
      await page.fill('#from', whole.from);
      await page.fill('#to', whole.to);
      await loaded(whole);
      // The page announces each answer it drops as superseded: listen for the held one's.
      await page.evaluate((held) => {
        const inPage = globalThis as unknown as InPage;
        inPage.document.addEventListener('answer-superseded', (e) => {
          const { path } = e.detail;
          if (path.startsWith('/api/movements?') && held.every((part) => path.includes(part))) inPage.heldDropped = true;
        });
      }, [`from=${whole.from}`, `to=${to}`]);
      release();
      // A page that drew the late answer never drops it: this wait then fails.
      await page.waitForFunction(() => (globalThis as unknown as InPage).heldDropped === true, null, { timeout: 15_000 });
    } finally {
      release();
      await page.unroute(matcher);
    }
    const movements = (await chartData('chart-movements'))!;
    expect([movements.labels[0], movements.labels.at(-1)]).toEqual([whole.from, whole.to]);
  });

  it('asks for the range and the currencies at once when it opens, and loads once both came', async () => {
    // A page of its own whose range answer is held: the currencies must be asked for meanwhile
    // (neither needs the other; in sequence they were a third of the first load at 10 M versions).
    const second = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const rangeUrl = (u: URL) => u.pathname === '/api/range';
    try {
      await second.route(rangeUrl, async (route) => {
        await held;
        await route.continue();
      });
      const rangeAsked = second.waitForRequest((r) => new URL(r.url()).pathname === '/api/range');
      const currenciesAsked = second.waitForRequest((r) => new URL(r.url()).pathname === '/api/currencies', { timeout: 15_000 });
      await second.goto(`${dashboard.url}/`);
      await rangeAsked;
      await currenciesAsked;
      release();
      await loaded(whole, second);
      expect(await second.locator('#currency option').count()).toBeGreaterThan(0);
    } finally {
      release();
      await second.close();
    }
  });

  it("opens a contract's timeline: its versions in order, each with the fields that changed", async () => {
    const { id } = await one<{ id: string }>(`SELECT resource_id AS id FROM ${s}.contract_history GROUP BY resource_id ORDER BY count(*) DESC, resource_id LIMIT 1`);
    const history = (await direct.query<{ version: number; deleted: boolean }>(`SELECT version, deleted FROM ${s}.contract_history WHERE resource_id = $1 ORDER BY version`, [id])).rows;
    const versions = history.map((r) => r.version);
    const deleted = new Set(history.filter((r) => r.deleted).map((r) => r.version));
    // How many versions a scenario contract has depends on how many of its webhooks the enricher
    // read at once (a busy machine reads later, and finds several changes in one read): at least two.
    expect(versions.length).toBeGreaterThan(1);
    await page.fill('#resource-id', id);
    await page.click('#search button[type=submit]');
    await page.waitForSelector('#timeline-table');
    expect(await page.locator('#timeline-title').innerText()).toContain(`Contract ${id}`);
    const shown = await page.$$eval('#timeline-table tbody tr', (rows) =>
      rows.map((r) => ({ version: Number(r.getAttribute('data-version')), fields: [...r.querySelectorAll('[data-field]')].map((f) => f.getAttribute('data-field')), text: r.textContent ?? '' })),
    );
    expect(shown.map((r) => r.version)).toEqual(versions);
    const changes = (await direct.query<{ version: number; fields: string[] }>(`SELECT version, array_agg(field ORDER BY field) AS fields FROM ${s}.contract_changes WHERE resource_id = $1 GROUP BY version`, [id])).rows;
    expect(changes.length).toBeGreaterThan(0);
    // A deletion is shown as one: "deleted", not every field going to null (which contract_changes lists).
    for (const c of changes) {
      const row = shown.find((r) => r.version === c.version);
      if (deleted.has(c.version)) {
        expect(row?.text, `version ${c.version}`).toContain('deleted');
        expect(row?.fields, `version ${c.version}`).toEqual([]);
      } else expect(row?.fields, `version ${c.version}`).toEqual(c.fields);
    }
    expect(problems).toEqual([]);
  });

  it('says so when the id names nothing', async () => {
    await page.fill('#resource-id', 'no-such-resource-0000');
    await page.click('#search button[type=submit]');
    await expect.poll(() => page.locator('#timeline-error').count()).toBe(1);
    expect(await text('timeline-error')).toMatch(/no contract, customer/);
  });
});

/** What the page offers the functions above: the document, and chart.js's global. */
interface InPage {
  document: {
    body: { dataset: Record<string, string | undefined> };
    getElementById(id: string): unknown;
    addEventListener(type: 'answer-superseded', listener: (e: { detail: { path: string } }) => void): void;
  };
  /** Set by the late-answer test when the page dropped the answer it held. */
  heldDropped?: boolean;
  Chart: { getChart(canvas: unknown): { data: { labels: string[]; datasets: { label: string; data: (number | null)[] }[] } } | undefined };
}
