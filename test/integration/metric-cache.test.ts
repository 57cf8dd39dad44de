import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { refreshMetrics } from '../../src/warehouse/metric-refresh.js';
import { createRandom } from '../../src/simulator/seeded-random.js';
import { startMetricRefresher } from '../../src/sink/metric-refresher.js';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { waitFor } from '../helpers/wait-for.js';
import { watchLostConnections } from '../helpers/lost-connection.js';
import { METRIC_VIEWS } from '../../src/warehouse/metric-views.js';
import { appendVersions, appendWebhooks, type AppendedVersion, type AppendedWebhook } from '../helpers/append-versions.js';
import { testConfig } from '../helpers/environment.js';
import { scenarioWarehouse } from '../helpers/scenario-warehouse.js';

/**
 * The metric rows kept at write time (warehouse/metric-views.sql, "Answers kept at write time")
 * are a copy, never a second definition: every metric view, and the business-date functions,
 * must answer the same from the kept rows as from the versions read at the query. Each
 * comparison runs in one transaction, so now() (business now) is the same on both sides: the
 * views as they are (kept rows and the listed contracts' live ones), then with no row kept and
 * every contract listed (all computed at the read), rolled back.
 */
const log = createLogger('error');

/** Every answer a kept row feeds: the public views, the lifecycle helper, the functions on a few dates. */
function questions(days: readonly string[]): string[] {
  return [
    ...METRIC_VIEWS.map((v) => `SELECT * FROM ${v}`),
    'SELECT * FROM metric_contract_lifecycle_all',
    'SELECT * FROM metric_mrr_spans',
    'SELECT * FROM metric_escalation_episodes',
    'SELECT * FROM metric_dashboard_range',
    'SELECT * FROM metric_contract_currencies',
    'SELECT * FROM metric_movement_counts',
    ...days.flatMap((d) => [`SELECT * FROM contract_state_on('${d}')`, `SELECT * FROM customer_state_on('${d}')`]),
  ];
}

/** Each question's rows as sorted JSON texts (rows compared as multisets). */
async function answers(client: pg.PoolClient, sqls: readonly string[]): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const sql of sqls) {
    const { rows } = await client.query<{ r: string }>(`SELECT to_jsonb(q)::text AS r FROM (${sql}) q ORDER BY 1`);
    out[sql] = rows.map((x) => x.r);
  }
  return out;
}

/**
 * Inside the caller's transaction: no row kept, every contract listed, so that every answer is
 * computed from the versions at the read, whatever the kept rows held.
 */
async function forgetKeptRows(client: pg.PoolClient): Promise<void> {
  await client.query(
    'DELETE FROM metric_contract_cache; DELETE FROM metric_unread_customer_cache; DELETE FROM metric_segment_cache; DELETE FROM metric_movement_cache; DELETE FROM metric_movement_day_cache; DELETE FROM metric_mrr_span_cache; DELETE FROM metric_daily_cache; DELETE FROM metric_payment_cache; DELETE FROM metric_mrr_customer_cache; DELETE FROM metric_mrr_month_cache',
  );
  await client.query('DELETE FROM metric_customer_cache');
  await client.query(`INSERT INTO metric_customers_dirty (customer_id) SELECT resource_id FROM current_facts WHERE resource_type = 'Customer'`);
  await client.query(`INSERT INTO metric_contracts_dirty (contract_id) SELECT resource_id FROM current_facts WHERE resource_type = 'Contract'`);
  await client.query(`INSERT INTO metric_payments_dirty (transaction_id) SELECT resource_id FROM current_facts WHERE resource_type = 'PaymentTransaction'`);
  // The episodes: nothing kept, the webhooks' fields read again from webhook_events (not as the
  // trigger appended them), every contract and dunning listed.
  await client.query('DELETE FROM metric_escalation_episode_cache; DELETE FROM metric_escalation_cover; DELETE FROM metric_dunning_cache; DELETE FROM metric_dunning_match_cache; DELETE FROM metric_escalation_event_cache; DELETE FROM metric_dunning_notice_cache');
  await client.query(
    `INSERT INTO metric_escalation_event_cache (event_id, event, received_at, contract_id, customer_id, trigger_days, due_date)
     SELECT event_id, event, received_at, wh_as_text(wh_field(payload, 'ContractId', 'contractId', 'contractid')), wh_as_text(wh_field(payload, 'CustomerId', 'customerId', 'customerid')),
            wh_as_integer(wh_field(payload, 'TriggerDays', 'triggerDays', 'triggerdays')), wh_as_timestamptz(wh_field(payload, 'DueDate', 'dueDate', 'duedate'))
       FROM webhook_events
      WHERE event IN ('PaymentEscalated', 'PaymentEscalationReset') AND wh_as_text(wh_field(payload, 'ContractId', 'contractId', 'contractid')) IS NOT NULL`,
  );
  await client.query(
    `INSERT INTO metric_dunning_notice_cache (dunning_id, received_at)
     SELECT wh_as_text(wh_field(payload, 'DunningId', 'dunningId', 'dunningid')), received_at FROM webhook_events
      WHERE event = 'DunningCreated' AND wh_as_text(wh_field(payload, 'DunningId', 'dunningId', 'dunningid')) IS NOT NULL`,
  );
  await client.query(`INSERT INTO metric_episodes_dirty (contract_id) SELECT resource_id FROM current_facts WHERE resource_type = 'Contract' UNION SELECT contract_id FROM metric_escalation_event_cache`);
  await client.query(`INSERT INTO metric_dunnings_dirty (dunning_id) SELECT resource_id FROM current_facts WHERE resource_type = 'Dunning'`);
}

/** The answers as the warehouse gives them now, and as computed with every contract's rows taken from its versions, at one now(). */
async function keptAndLive(pool: pg.Pool, schema: string, days: readonly string[]): Promise<{ kept: Record<string, string[]>; live: Record<string, string[]>; listed: number }> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
    const listed = Number((await client.query<{ n: string }>('SELECT count(DISTINCT contract_id) AS n FROM metric_contracts_dirty')).rows[0]!.n);
    const kept = await answers(client, questions(days));
    await forgetKeptRows(client);
    const live = await answers(client, questions(days));
    return { kept, live, listed };
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
}

describe('metric rows kept at write time', () => {
  it('on the sandbox scenario, every view answers the same from the kept rows as from the versions', async () => {
    const scenario = await scenarioWarehouse();
    const pool = createPool({ databaseUrl: scenario.databaseUrl, applicationName: 'test', log });
    const client = await pool.connect();
    try {
      // Refreshed inside a transaction that is rolled back: the shared scenario stays as it is.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await client.query(`SET LOCAL search_path TO ${quoteIdent(scenario.schema)}`);
      const days = ['2025-03-31', '2025-06-30', '2025-12-31'];
      await forgetKeptRows(client);
      const live = await answers(client, questions(days));
      const refreshed = Number((await client.query<{ n: string }>('SELECT metric_refresh() AS n')).rows[0]!.n);
      expect(refreshed).toBeGreaterThan(50);
      expect((await client.query('SELECT * FROM metric_contracts_dirty')).rows).toEqual([]);
      const kept = await answers(client, questions(days));
      for (const sql of Object.keys(live)) expect(kept[sql], sql).toEqual(live[sql]);
      // Not vacuous: the scenario's views have rows.
      expect(live['SELECT * FROM contract_daily']!.length).toBeGreaterThan(100);
      expect(live['SELECT * FROM subscription_movements']!.length).toBeGreaterThan(20);
      expect(live['SELECT * FROM mrr_monthly']!.length).toBeGreaterThan(5);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      await pool.end();
    }
  });

  describe('on a history written in statements, refreshed between some of them', () => {
    const config = testConfig();
    let pool: pg.Pool;
    const schema = `metric_cache_${process.pid}_${Date.now() % 100000}`;

    beforeAll(async () => {
      pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
      await migrate(pool, { schema, log });
      await pool.query(`INSERT INTO ${quoteIdent(schema)}.fx_rates (currency, valid_from, rate_to_reporting) VALUES ('EUR', '2024-01-01', 1), ('CHF', '2024-01-01', 1.05)`);
    });
    afterAll(async () => {
      await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      await pool.end();
    });

    it('kept rows equal the versions after every statement, late, deleted and reactivated contracts and payments included', async () => {
      const histories = contractHistories(20251126, 36);
      const catalog: AppendedVersion[] = ['v-1', 'v-2', 'v-3'].map((id, i) => ({
        type: 'PlanVariant', id, version: 1, at: '2024-06-01T00:00:00Z', body: { Id: id, PlanId: `plan-${i + 1}`, RecurringFee: 10 * (i + 1), FeePeriod: { Unit: i === 2 ? 'Year' : 'Month', Quantity: 1 } },
      }));
      await appendVersions(pool, schema, catalog);
      const random = createRandom(7).next;
      // Prices change while contracts are on them (every customer on the variant moves), and
      // contracts start or end between now and the running month's end (the kept running month is
      // at its end, the views' at now).
      const prices: AppendedVersion[] = [
        { ...catalog[0]!, version: 2, at: '2025-09-01T00:00:00Z', body: { ...catalog[0]!.body, RecurringFee: 12.5 } },
        { ...catalog[1]!, version: 2, at: '2026-02-01T00:00:00Z', body: { ...catalog[1]!.body, RecurringFee: 17 } },
        { ...catalog[0]!, version: 3, at: '2026-06-01T00:00:00Z', body: { ...catalog[0]!.body, RecurringFee: 9 } },
      ];
      const pending = [...histories.flat(), ...paymentHistories(11, 24), ...runningMonthHistories(), ...customerHistories(13)];
      for (const price of prices) pending.splice(Math.floor(random() * pending.length), 0, price);
      // Versions go in in order of reading, but one in six swaps with the next (a late version).
      for (let i = 0; i + 1 < pending.length; i++) {
        if (random() < 1 / 6) [pending[i], pending[i + 1]] = [pending[i + 1]!, pending[i]!];
      }
      // A contract without a StartDate, in a currency no other contract has: the MRR views do not
      // price it, so the dashboard does not offer its currency.
      pending.splice(Math.floor(random() * pending.length), 0, { type: 'Contract', id: 'draft-usd', version: 1, at: '2025-05-01T00:00:00Z', body: { Id: 'draft-usd', Currency: 'usd', PlanId: 'plan-1' } });
      const written = [...pending];
      const days = ['2025-02-28', '2025-09-30', '2026-05-31'];
      let statements = 0;
      let refreshes = 0;
      while (pending.length > 0) {
        const batch = pending.splice(0, 1 + Math.floor(random() * 12));
        await appendVersions(pool, schema, batch, statements % 3);
        statements++;
        if (random() < 0.5) {
          await refreshMetrics(pool, schema);
          refreshes++;
        }
        if (statements % 4 === 0 || pending.length === 0) {
          const { kept, live } = await keptAndLive(pool, schema, days);
          for (const sql of Object.keys(live)) expect(kept[sql], `${sql} after statement ${statements}`).toEqual(live[sql]);
        }
      }
      expect(refreshes).toBeGreaterThan(3);
      const last = await refreshMetrics(pool, schema);
      expect(last?.pending).toBe(0);
      const { kept, live, listed } = await keptAndLive(pool, schema, days);
      expect(listed).toBe(0);
      for (const sql of Object.keys(live)) expect(kept[sql], sql).toEqual(live[sql]);
      expect(live['SELECT * FROM contract_daily']!.length).toBeGreaterThan(300);
      expect(live['SELECT * FROM subscription_movements']!.map((r) => JSON.parse(r).movement)).toEqual(
        expect.arrayContaining(['new', 'trial_start', 'trial_conversion', 'trial_not_converted', 'plan_change', 'cancellation', 'reactivation', 'churn']),
      );
      expect(live['SELECT * FROM mrr_monthly']!.length).toBeGreaterThan(10);
      expect(live['SELECT * FROM mrr_movements']!.map((r) => JSON.parse(r).movement)).toEqual(
        expect.arrayContaining(['new', 'expansion', 'contraction', 'churn', 'reactivation', 'unchanged']),
      );
      // The contract without a customer counts, as a customer of its own.
      expect(live['SELECT * FROM mrr_movements']!.filter((r) => JSON.parse(r).customer_id === null).length).toBeGreaterThan(5);
      expect(live['SELECT * FROM payment_outcomes']!.length).toBeGreaterThan(5);
      // The dashboard's currencies: those of the contracts with a StartDate the service still has,
      // counted from what was written.
      const current = new Map<string, AppendedVersion>();
      for (const v of written) if (v.type === 'Contract' && (current.get(v.id)?.version ?? 0) < v.version) current.set(v.id, v);
      const counts = new Map<string, number>();
      for (const v of current.values()) {
        if (v.body && typeof v.body.StartDate === 'string') counts.set(String(v.body.Currency).toUpperCase(), (counts.get(String(v.body.Currency).toUpperCase()) ?? 0) + 1);
      }
      expect(live['SELECT * FROM metric_contract_currencies']!.map((r) => JSON.parse(r) as { currency: string; contracts: number })).toEqual(
        [...counts].map(([currency, contracts]) => ({ currency, contracts })).sort((a, b) => (a.currency < b.currency ? -1 : 1)),
      );
      expect(counts.has('USD')).toBe(false);
      // Customers read, renamed, deleted, and named by contracts only.
      const customers = live['SELECT * FROM customer_overview']!.map((r) => JSON.parse(r) as { read: boolean; deleted: boolean });
      expect(customers.filter((c) => c.read && !c.deleted).length).toBeGreaterThan(1);
      expect(customers.filter((c) => c.read && c.deleted).length).toBeGreaterThan(0);
      expect(customers.filter((c) => !c.read).length).toBeGreaterThan(1);
    });

    it('the MRR views read the kept months and sums, and every customer from the spans once the kept months end before the running month', async () => {
      await refreshMetrics(pool, schema);
      const client = await pool.connect();
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
        const state = await client.query<{ through: string; running: string }>(
          `SELECT mrr_through::text AS through, date_trunc('month', now() AT TIME ZONE 'UTC')::date::text AS running FROM metric_cache_state`,
        );
        // Kept up to the month after the running one.
        const { through, running } = state.rows[0]!;
        expect(through > running).toBe(true);
        const before = await answers(client, questions([]));
        // Read from the kept rows: a change to them shows (rolled back below).
        const month = (await client.query<{ m: string }>(`SELECT min(month)::text AS m FROM metric_mrr_month_cache WHERE currency = 'EUR' AND mrr > 0`)).rows[0]!.m;
        await client.query(`UPDATE metric_mrr_month_cache SET mrr = mrr + 1000 WHERE month = $1 AND currency = 'EUR' AND NOT all_currencies`, [month]);
        const moved = await client.query<{ mrr: string }>(`SELECT mrr FROM mrr_monthly WHERE month = $1 AND currency = 'EUR'`, [month]);
        const kept = before['SELECT * FROM mrr_monthly']!.map((r) => JSON.parse(r)).find((r) => r.month === month && r.currency === 'EUR');
        expect(Number(moved.rows[0]!.mrr)).toBeCloseTo(Number(kept.mrr) + 1000, 6);
        await client.query(`UPDATE metric_mrr_month_cache SET mrr = mrr - 1000 WHERE month = $1 AND currency = 'EUR' AND NOT all_currencies`, [month]);
        expect(Number((await client.query(`SELECT count(*) FROM metric_mrr_customer_cache`)).rows[0].count)).toBeGreaterThan(50);
        // Kept months that end before the running month (no refresh since it began): every
        // customer is computed at the read, the answers stay the same ...
        await client.query(`UPDATE metric_cache_state SET mrr_through = (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date`);
        const stale = await answers(client, questions([]));
        for (const sql of Object.keys(before)) expect(stale[sql], `${sql}, kept months ending last month`).toEqual(before[sql]);
        // ... and the next refresh keeps every customer's months again, up to the month after the running one.
        const keptMonths = async () => (await client.query<{ n: string }>('SELECT count(*) AS n FROM metric_mrr_customer_cache')).rows[0]!.n;
        const months = await keptMonths();
        expect(Number((await client.query<{ n: string }>('SELECT metric_refresh() AS n')).rows[0]!.n)).toBe(0);
        expect(await keptMonths()).toBe(months);
        expect((await client.query<{ through: string }>('SELECT mrr_through::text AS through FROM metric_cache_state')).rows[0]!.through).toBe(through);
        const refreshed = await answers(client, questions([]));
        for (const sql of Object.keys(before)) expect(refreshed[sql], `${sql}, after the refresh that kept a month further`).toEqual(before[sql]);
        await forgetKeptRows(client);
        const live = await answers(client, questions([]));
        for (const sql of Object.keys(before)) expect(live[sql], `${sql}, nothing kept`).toEqual(before[sql]);
      } finally {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
    });

    it('kept episodes equal the webhooks and versions after every statement, whatever order they arrive in', async () => {
      const histories = contractHistories(20251127, 30);
      const inputs = [...histories.flat().map((v) => ({ version: v })), ...episodeInputs(31, histories)];
      const random = createRandom(17).next;
      // In order of time (receipt, read), but one in five swaps with the next: a webhook stored
      // after the version it caused, a payment's webhook before its transaction, a late version.
      inputs.sort((a, b) => timeOf(a).localeCompare(timeOf(b)));
      for (let i = 0; i + 1 < inputs.length; i++) {
        if (random() < 1 / 5) [inputs[i], inputs[i + 1]] = [inputs[i + 1]!, inputs[i]!];
      }
      const days = ['2025-06-30', '2026-05-31'];
      let statements = 0;
      while (inputs.length > 0) {
        // A statement appends versions or webhooks: the run of one kind at the head of the queue, at most 1 to 10 of them.
        const n = 1 + Math.floor(random() * 10);
        const kind = 'version' in inputs[0]! ? 'version' : 'webhook';
        let k = 0;
        while (k < n && k < inputs.length && ('version' in inputs[k]!) === (kind === 'version')) k++;
        const batch = inputs.splice(0, k);
        if (kind === 'version') await appendVersions(pool, schema, batch.map((x) => (x as { version: AppendedVersion }).version), statements % 3);
        else await appendWebhooks(pool, schema, batch.map((x) => (x as { webhook: AppendedWebhook }).webhook));
        statements++;
        if (random() < 0.4) await refreshMetrics(pool, schema);
        if (statements % 5 === 0 || inputs.length === 0) {
          const { kept, live } = await keptAndLive(pool, schema, days);
          for (const sql of Object.keys(live)) expect(kept[sql], `${sql} after statement ${statements}`).toEqual(live[sql]);
        }
      }
      await refreshMetrics(pool, schema);
      const { kept, live } = await keptAndLive(pool, schema, days);
      for (const sql of Object.keys(live)) expect(kept[sql], sql).toEqual(live[sql]);
      // Not vacuous: every outcome, the business-now cut, dunnings inside and outside escalations.
      const episodes = live['SELECT * FROM metric_escalation_episodes']!.map((r) => JSON.parse(r) as { outcome: string });
      expect(new Set(episodes.map((e) => e.outcome))).toEqual(new Set(['paid', 'reset', 'unknown', 'open']));
      // The kept spans of business now to come: each holds the episodes as any now() in it gives
      // them, the webhooks received by its start and by the moment before its end alike.
      const s = quoteIdent(schema);
      const columns = 'episode_id, contract_id, customer_id, started_at, ended_at, due_date, max_trigger_days, trigger_days_reached, outcome, duration, first_received_at, reset_received_at, outcome_read_at';
      const spans = await pool.query<{ contract_id: string; kept: string; at_start: string; at_end: string }>(
        `SELECT k.contract_id,
                (SELECT COALESCE(array_agg(to_jsonb(x)::text ORDER BY to_jsonb(x)::text), '{}') FROM (SELECT ${columns} FROM ${s}.metric_escalation_episode_cache c WHERE c.contract_id = k.contract_id AND c.cut_from = k.cut_from) x)::text AS kept,
                (SELECT COALESCE(array_agg(to_jsonb(x)::text ORDER BY to_jsonb(x)::text), '{}') FROM ${s}.metric_escalation_episodes_in(ARRAY[k.contract_id], ARRAY[k.cut_from]) x)::text AS at_start,
                (SELECT COALESCE(array_agg(to_jsonb(x)::text ORDER BY to_jsonb(x)::text), '{}') FROM ${s}.metric_escalation_episodes_in(ARRAY[k.contract_id], ARRAY[LEAST(k.cut_until - interval '1 microsecond', 'infinity')]) x)::text AS at_end
           FROM (SELECT DISTINCT contract_id, cut_from, cut_until FROM ${s}.metric_escalation_episode_cache) k`,
      );
      for (const span of spans.rows) expect([span.at_start, span.at_end], span.contract_id).toEqual([span.kept, span.kept]);
      const counts = new Map<string, number>();
      for (const span of spans.rows) counts.set(span.contract_id, (counts.get(span.contract_id) ?? 0) + 1);
      expect(Math.max(...counts.values())).toBeGreaterThan(2);
      const dunnings = live['SELECT * FROM dunning_episodes']!.map((r) => JSON.parse(r) as { episode_id: string; dunning_id: string; contract_id: string | null; levels_reached: number[] | null; dunning_ids: string[] });
      expect(dunnings.some((d) => d.episode_id !== d.dunning_id && d.dunning_ids.length > 1)).toBe(true);
      expect(dunnings.some((d) => d.episode_id === d.dunning_id && d.contract_id !== null)).toBe(true);
      expect(dunnings.some((d) => d.contract_id === null)).toBe(true);
      expect(dunnings.some((d) => (d.levels_reached ?? []).length > 1)).toBe(true);
    });

    it('kept episodes stay right when now() passes the receipt of a webhook stored before it came', async () => {
      const s = quoteIdent(schema);
      const { rows } = await pool.query<{ now: string }>('SELECT now()::text AS now');
      const now = new Date(rows[0]!.now);
      const at = (seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString();
      const due = at(-30 * 86_400);
      const step = (days: number, receivedAt: string): AppendedWebhook => ({
        id: crypto.randomUUID(),
        event: 'PaymentEscalated',
        at: receivedAt,
        payload: { ContractId: 'c-clock', CustomerId: 'cu-clock', TriggerDays: days, DueDate: due },
      });
      // The second step's receipt 15 s ahead of the database's clock (a service clock ahead of the
      // loader's; time enough to append and refresh before it comes), then a reset 16 s ahead:
      // three spans to come after the refresh.
      await appendWebhooks(pool, schema, [step(7, at(-86_400)), step(14, at(15)), { id: crypto.randomUUID(), event: 'PaymentEscalationReset', at: at(16), payload: { ContractId: 'c-clock' } }]);
      await refreshMetrics(pool, schema);
      const reached = async () => (await pool.query<{ r: number[] }>(`SELECT trigger_days_reached AS r FROM ${s}.payment_escalation_episodes WHERE contract_id = 'c-clock'`)).rows.map((x) => x.r);
      expect(await reached()).toEqual([[7]]);
      await waitFor(async () => (await pool.query<{ past: boolean }>('SELECT now() > $1::timestamptz + interval \'1 second\' AS past', [at(16)])).rows[0]!.past, {
        timeoutMs: 40_000,
        what: "the database's clock past the reset's receipt",
      });
      expect((await pool.query(`SELECT 1 FROM ${s}.metric_episodes_dirty WHERE contract_id = 'c-clock'`)).rows).toEqual([]);
      expect(await reached()).toEqual([[7, 14]]);
      const { kept, live } = await keptAndLive(pool, schema, ['2025-09-30']);
      for (const sql of Object.keys(live)) expect(kept[sql], sql).toEqual(live[sql]);
      expect(live['SELECT * FROM metric_escalation_episodes']!.filter((r) => r.includes('c-clock')).map((r) => JSON.parse(r).outcome)).toEqual(['unknown']);
    });

    it('a refresh leaves listed what was appended after its snapshot, and a second refresh beside it gives way', async () => {
      const s = quoteIdent(schema);
      await refreshMetrics(pool, schema);
      const [first] = contractHistories(99, 1);
      const a = await pool.connect();
      try {
        await a.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await a.query(`SET LOCAL search_path TO ${s}`);
        await a.query('SELECT count(*) FROM metric_contracts_dirty'); // the snapshot
        await appendVersions(pool, schema, first!.map((v) => ({ ...v, id: `late-${v.id}` })));
        expect(Number((await a.query<{ n: string }>('SELECT metric_refresh() AS n')).rows[0]!.n)).toBe(0);
        await a.query('COMMIT');
      } finally {
        a.release();
      }
      const listed = await pool.query<{ contract_id: string }>(`SELECT DISTINCT contract_id FROM ${s}.metric_contracts_dirty`);
      expect(listed.rows.map((r) => r.contract_id)).toEqual([`late-${first![0]!.id}`]);

      // Two refreshes at once: the second waits for the first's row, then fails with 40001.
      await appendVersions(pool, schema, [{ ...first![0]!, id: 'another', version: 1 }]);
      const b = await pool.connect();
      try {
        await b.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await b.query(`SET LOCAL search_path TO ${s}`);
        expect(Number((await b.query<{ n: string }>('SELECT metric_refresh() AS n')).rows[0]!.n)).toBe(2);
        // Its outcome is taken at once: it settles as soon as the first commits.
        const second = refreshMetrics(pool, schema).then(
          () => ({ code: 'none' }),
          (err: unknown) => err as { code?: string },
        );
        await waitForLockWait(pool);
        await b.query('COMMIT');
        expect(await second).toMatchObject({ code: '40001' });
      } finally {
        b.release();
      }
      expect((await refreshMetrics(pool, schema))?.refreshed).toBe(0);
      const { kept, live } = await keptAndLive(pool, schema, ['2025-09-30']);
      for (const sql of Object.keys(live)) expect(kept[sql], sql).toEqual(live[sql]);
    });

    it('a refresh whose connection the server ends fails with the error, and the process goes on', async () => {
      // The server ends a session's connection when it shuts down (or an administrator ends the
      // session): pg then emits 'error' on the client, and a client checked out with no listener
      // for it throws that error out of the socket's handler, which ends the sink's process.
      const s = quoteIdent(schema);
      await appendVersions(pool, schema, [{ ...contractHistories(4244, 1)[0]![0]!, id: 'connection-lost' }]);
      const holder = await pool.connect();
      const lost = watchLostConnections(pool);
      try {
        const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM ${s}.metric_cache_state FOR UPDATE`);
        const refresh = refreshMetrics(pool, schema).then(
          () => ({ code: 'none' }),
          (err: unknown) => err as { code?: string },
        );
        // The refresh's session, waiting for the held row.
        const refreshPid = await lost.endSessionBlockedBy(holderPid, 'the refresh waiting for the held row');
        expect(await refresh).toMatchObject({ code: '57P01' });
        // The connection's end comes after the query's error.
        await lost.socketClosed(refreshPid);
        await holder.query('ROLLBACK');
      } finally {
        lost.stop();
        holder.release();
      }
      expect(lost.uncaught).toEqual([]);
      // The pool hands out working connections, and the next refresh does the work.
      expect((await refreshMetrics(pool, schema))?.refreshed).toBeGreaterThan(0);
    });

    it("the sink's refresher empties the list at its pace, counts what it refreshed, and stops", async () => {
      await appendVersions(pool, schema, contractHistories(4242, 5).flat());
      const registers = [new Registry()];
      const metrics = {
        metricResourcesRefreshed: new Counter({ name: 'refreshed', help: 'h', registers }),
        metricResourcesPending: new Gauge({ name: 'pending', help: 'h', registers }),
        metricRefreshSeconds: new Histogram({ name: 'seconds', help: 'h', registers }),
      };
      const refresher = startMetricRefresher({ pool, schema, intervalMs: 50, metrics, log });
      try {
        await waitFor(async () => (await pool.query(`SELECT 1 FROM ${quoteIdent(schema)}.metric_contracts_dirty LIMIT 1`)).rows.length === 0, { timeoutMs: 20_000, what: 'the list emptied' });
        await waitFor(async () => (await metrics.metricResourcesRefreshed.get()).values[0]?.value === 5, { timeoutMs: 5_000, what: 'five contracts counted' });
      } finally {
        await refresher.stop();
      }
      expect((await metrics.metricResourcesPending.get()).values[0]?.value).toBe(0);
      // Stopped: what is appended now stays listed.
      await appendVersions(pool, schema, [{ ...contractHistories(4243, 1)[0]![0]!, id: 'after-stop' }]);
      await new Promise((r) => setTimeout(r, 200));
      expect((await pool.query(`SELECT DISTINCT contract_id FROM ${quoteIdent(schema)}.metric_contracts_dirty`)).rows).toEqual([{ contract_id: 'after-stop' }]);
    });

    it('counts what the episodes\' part refreshed: the contracts of escalation webhooks and the dunnings', async () => {
      await refreshMetrics(pool, schema);
      await appendVersions(pool, schema, [
        { type: 'Dunning', id: 'd-counted-1', version: 1, at: '2025-03-02T00:00:00Z', body: { Id: 'd-counted-1', ContractId: 'c-counted', CustomerId: 'cu-counted', DunningLevel: 1 } },
        { type: 'Dunning', id: 'd-counted-2', version: 1, at: '2025-03-03T00:00:00Z', body: { Id: 'd-counted-2', CustomerId: 'cu-counted', DunningLevel: 1 } },
      ]);
      await appendWebhooks(pool, schema, [
        { id: '6f1c1c5e-0000-4000-8000-000000000001', event: 'PaymentEscalated', at: '2025-03-04T00:00:00Z', payload: { ContractId: 'c-counted', CustomerId: 'cu-counted', TriggerDays: 7, DueDate: '2025-02-25T00:00:00Z' } },
        { id: '6f1c1c5e-0000-4000-8000-000000000002', event: 'PaymentEscalated', at: '2025-03-11T00:00:00Z', payload: { ContractId: 'c-counted', CustomerId: 'cu-counted', TriggerDays: 14, DueDate: '2025-02-25T00:00:00Z' } },
      ]);
      // One contract (two webhooks) and two dunnings; nothing else was listed.
      expect(await refreshMetrics(pool, schema)).toEqual({ refreshed: 3, pending: 0 });
      expect(await refreshMetrics(pool, schema)).toEqual({ refreshed: 0, pending: 0 });
      // A contract listed for its own rows and for its episodes (each version lists both) counts once.
      await appendVersions(pool, schema, [{ ...contractHistories(4244, 1)[0]![0]!, id: 'c-counted' }]);
      expect(await refreshMetrics(pool, schema)).toEqual({ refreshed: 1, pending: 0 });
    });

    it('a customer only a contract named leaves the customers when the contract moves to another', async () => {
      const contract = (version: number, customer: string): AppendedVersion => ({
        type: 'Contract', id: 'c-moves', version, at: `2024-12-0${version}T00:00:00Z`,
        body: { Id: 'c-moves', CustomerId: customer, Currency: 'EUR', PlanId: 'plan-1', StartDate: '2024-12-01T00:00:00Z' },
      });
      const named = async () => (await pool.query<{ customer_id: string }>(
        `SELECT customer_id FROM ${quoteIdent(schema)}.customer_overview WHERE customer_id IN ('cu-ghost', 'cu-other') ORDER BY 1`,
      )).rows.map((r) => r.customer_id);
      await appendVersions(pool, schema, [contract(1, 'cu-ghost')]);
      await refreshMetrics(pool, schema);
      expect(await named()).toEqual(['cu-ghost']);
      await appendVersions(pool, schema, [contract(2, 'cu-other')]);
      expect(await named()).toEqual(['cu-other']);
      await refreshMetrics(pool, schema);
      expect(await named()).toEqual(['cu-other']);
      const { kept, live } = await keptAndLive(pool, schema, ['2024-12-31']);
      for (const sql of Object.keys(live)) expect(kept[sql], sql).toEqual(live[sql]);
    });

    it('a transaction counts once by its latest status while it waits for the refresh', async () => {
      const payment = (version: number, status: string, day: string): AppendedVersion => ({
        type: 'PaymentTransaction', id: 'pt-twice', version, at: `${day}T12:00:00Z`,
        body: { Id: 'pt-twice', Amount: 40, Currency: 'EUR', PaymentProvider: 'Twice', Status: { Status: status, Timestamp: `${day}T10:00:00Z` } },
      });
      const outcomes = async () => (await pool.query<{ day: string; succeeded: number; failed: number }>(
        `SELECT day::text AS day, succeeded::int, failed::int FROM ${quoteIdent(schema)}.payment_outcomes WHERE provider = 'Twice' ORDER BY 1`,
      )).rows;
      await appendVersions(pool, schema, [payment(1, 'Failed', '2024-12-10')]);
      await refreshMetrics(pool, schema);
      expect(await outcomes()).toEqual([{ day: '2024-12-10', succeeded: 0, failed: 1 }]);
      await appendVersions(pool, schema, [payment(2, 'Succeeded', '2024-12-11')]);
      expect(await outcomes()).toEqual([{ day: '2024-12-11', succeeded: 1, failed: 0 }]);
      await refreshMetrics(pool, schema);
      expect(await outcomes()).toEqual([{ day: '2024-12-11', succeeded: 1, failed: 0 }]);
    });

    it('a dunning moved to another contract leaves its escalation episode while it waits for the refresh', async () => {
      const dunning = (version: number, contract: string): AppendedVersion => ({
        type: 'Dunning', id: 'd-moves', version, at: `2024-12-1${version}T12:00:00Z`,
        body: { Id: 'd-moves', ContractId: contract, CustomerId: 'cu-dun', DocumentDate: '2024-12-11T00:00:00Z', DunningLevel: 1 },
      });
      const placed = async () => (await pool.query<{ episode_id: string; contract_id: string; dunning_ids: string[] }>(
        `SELECT episode_id, contract_id, dunning_ids FROM ${quoteIdent(schema)}.dunning_episodes WHERE 'd-moves' = ANY (dunning_ids)`,
      )).rows;
      await appendWebhooks(pool, schema, [
        { id: '6f1c1c5e-0000-4000-8000-0000000000d1', event: 'PaymentEscalated', at: '2024-12-08T00:00:00Z', payload: { ContractId: 'c-dun-a', CustomerId: 'cu-dun', TriggerDays: 7, DueDate: '2024-12-01T00:00:00Z' } },
      ]);
      await appendVersions(pool, schema, [dunning(1, 'c-dun-a')]);
      await refreshMetrics(pool, schema);
      const [inEpisode] = await placed();
      expect(inEpisode).toMatchObject({ contract_id: 'c-dun-a' });
      expect(inEpisode!.episode_id).not.toBe('d-moves');
      await appendVersions(pool, schema, [dunning(2, 'c-dun-b')]);
      const alone = [{ episode_id: 'd-moves', contract_id: 'c-dun-b', dunning_ids: ['d-moves'] }];
      expect(await placed()).toEqual(alone);
      await refreshMetrics(pool, schema);
      expect(await placed()).toEqual(alone);
    });

    it("the dashboard's movement counts equal subscription_movements' wherever the kept counts were settled, and for a reader whose now() is before that", async () => {
      // Two plan changes of one contract on one day, at 10:00 and 14:00: one contract that day. A
      // trial followed by an Inactive phase, converting in 2100: not converted from its end until then.
      // Twenty histories of its own besides, so that the kept counts hold many days whatever ran before.
      await appendVersions(pool, schema, [
        ...contractHistories(20251128, 20).flat(),
        {
          type: 'Contract', id: 'c-gap', version: 1, at: '2024-11-16T00:00:00Z',
          body: {
            Id: 'c-gap', Currency: 'EUR', PlanId: 'plan-1', StartDate: '2024-10-01T00:00:00Z',
            Phases: [
              { Type: 'Trial', StartDate: '2024-10-01T00:00:00Z', PlanId: 'plan-1' },
              { Type: 'Inactive', StartDate: '2024-10-31T00:00:00Z' },
              { Type: 'Normal', StartDate: '2100-01-01T00:00:00Z', PlanId: 'plan-1', PlanVariantId: 'v-1', Quantity: 1 },
            ],
          },
        },
        {
          type: 'Contract', id: 'c-twice', version: 1, at: '2024-11-16T00:00:00Z',
          body: {
            Id: 'c-twice', Currency: 'EUR', PlanId: 'plan-1', StartDate: '2024-10-01T00:00:00Z',
            Phases: [
              { Type: 'Normal', StartDate: '2024-10-01T00:00:00Z', PlanId: 'plan-1', PlanVariantId: 'v-1', Quantity: 1 },
              { Type: 'Normal', StartDate: '2024-11-15T10:00:00Z', PlanId: 'plan-2', PlanVariantId: 'v-2', Quantity: 1 },
              { Type: 'Normal', StartDate: '2024-11-15T14:00:00Z', PlanId: 'plan-3', PlanVariantId: 'v-3', Quantity: 1 },
            ],
          },
        },
      ]);
      await refreshMetrics(pool, schema);
      const client = await pool.connect();
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
        const both = async () => {
          const a = await answers(client, ['SELECT * FROM metric_movement_counts', 'SELECT day, movement, contracts FROM subscription_movements']);
          return Object.values(a) as [string[], string[]];
        };
        const [counts, movements] = await both();
        expect(counts).toEqual(movements);
        expect(movements.map((r) => JSON.parse(r) as unknown)).toEqual(
          expect.arrayContaining([{ day: '2024-11-15', movement: 'plan_change', contracts: 1 }, { day: '2024-10-31', movement: 'trial_not_converted', contracts: 1 }]),
        );
        // Some movements are still to come, and some kept ones counted.
        const { rows: [seen] } = await client.query<{ future: number; kept: number }>(
          'SELECT count(*) FILTER (WHERE counts_from > now())::int AS future, (SELECT count(*)::int FROM metric_movement_day_cache) AS kept FROM metric_movement_cache',
        );
        expect(seen!.future).toBeGreaterThan(0);
        expect(seen!.kept).toBeGreaterThan(10);
        // Settled between the two plan changes, long before every movement, after all of them
        // (a reader's now() before the settling: the counts are computed at the read).
        for (const at of ['2024-11-15T12:00:00Z', '2024-01-01T00:00:00Z', '2100-01-01T00:00:00Z']) {
          await client.query('SELECT metric_settle_movements($1)', [at]);
          const [c, m] = await both();
          expect(c, `settled before ${at}`).toEqual(m);
        }
        // The refresh settles them again at now() once the last settling is a day old.
        await client.query('SELECT metric_settle_movements($1)', ['2024-11-15T12:00:00Z']);
        await client.query('SELECT metric_refresh()');
        const { rows: [state] } = await client.query<{ now: boolean }>('SELECT movements_settled_before = now() AS now FROM metric_cache_state');
        expect(state!.now).toBe(true);
        const [c, m] = await both();
        expect(c).toEqual(m);
      } finally {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
    });
  });
});

async function waitForLockWait(pool: pg.Pool): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%metric_refresh%'`);
    if (rows.length > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the second refresh never waited for the first');
}

/**
 * Contract histories as the service would show them, versions in order: a trial or not, plan
 * changes (a new Normal phase), a cancellation (EndDate and an Inactive phase, some in the
 * future), a reactivation (the EndDate withdrawn), a deletion; dates from 2025 to 2027 so that
 * business now cuts some of them.
 */
function contractHistories(seed: number, count: number): AppendedVersion[][] {
  const random = createRandom(seed).next;
  const day = (base: Date, days: number) => new Date(base.getTime() + days * 86_400_000).toISOString();
  const out: AppendedVersion[][] = [];
  for (let k = 0; k < count; k++) {
    const id = `c-${seed}-${k}`;
    const start = new Date(Date.UTC(2025, 0, 1) + Math.floor(random() * 700) * 86_400_000);
    const trial = random() < 0.4;
    const currency = random() < 0.7 ? 'EUR' : 'CHF';
    const variant = (n: number) => `v-${n}`;
    let plan = 1 + Math.floor(random() * 3);
    let customer = `cu-${k % 9}`;
    const phases: Record<string, unknown>[] = trial ? [{ Type: 'Trial', StartDate: start.toISOString(), PlanId: `plan-${plan}` }] : [];
    const firstNormal = trial ? day(start, 14) : start.toISOString();
    if (!trial || random() < 0.6) phases.push({ Type: 'Normal', StartDate: firstNormal, PlanId: `plan-${plan}`, PlanVariantId: variant(plan), Quantity: 1 + Math.floor(random() * 3) });
    let endDate: string | undefined;
    let read = new Date(start.getTime() - 86_400_000);
    const versions: AppendedVersion[] = [];
    const body = (status: string) => ({
      Id: id,
      CustomerId: customer,
      PlanId: `plan-${plan}`,
      Currency: currency,
      StartDate: start.toISOString(),
      LifecycleStatus: status,
      Phases: phases.map((p) => ({ ...p })),
      ...(endDate ? { EndDate: endDate } : {}),
    });
    const push = (b: Record<string, unknown> | null) => {
      read = new Date(read.getTime() + (1 + Math.floor(random() * 60)) * 86_400_000);
      versions.push({ type: 'Contract', id, version: versions.length + 1, at: read.toISOString(), body: b });
    };
    push(body(trial ? 'InTrial' : 'Active'));
    const steps = 1 + Math.floor(random() * 4);
    for (let i = 0; i < steps; i++) {
      const r = random();
      if (r < 0.35 && !endDate) {
        plan = 1 + ((plan + Math.floor(random() * 2)) % 3);
        phases.push({ Type: 'Normal', StartDate: day(read, 1 + Math.floor(random() * 20)), PlanId: `plan-${plan}`, PlanVariantId: variant(plan), Quantity: 1 });
        push(body('Active'));
      } else if (r < 0.45 && !endDate) {
        // The contract moves to another customer: both customers' MRR months change.
        customer = `cu-${(k + 1 + Math.floor(random() * 8)) % 9}`;
        push(body('Active'));
      } else if (r < 0.75 && !endDate) {
        endDate = day(read, Math.floor(random() * 90) - 30);
        phases.push({ Type: 'Inactive', StartDate: endDate });
        push(body(new Date(endDate) < new Date() ? 'Ended' : 'Active'));
      } else if (endDate) {
        endDate = undefined;
        phases.pop();
        push(body('Active'));
      } else {
        push(body('Active'));
      }
    }
    if (random() < 0.15) push(null);
    out.push(versions);
  }
  return out;
}

/**
 * Contracts whose paying span starts, or ends, between now and the end of the running UTC month
 * (at the midpoint), read a month before, for customers with other contracts kept; and one
 * paying contract without a customer.
 */
function runningMonthHistories(): AppendedVersion[] {
  const now = Date.now();
  const d = new Date(now);
  const monthEnd = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  const between = new Date((now + monthEnd) / 2).toISOString();
  const read = new Date(now - 30 * 86_400_000).toISOString();
  const contract = (id: string, customer: string | undefined, start: string, end?: string): AppendedVersion => ({
    type: 'Contract',
    id,
    version: 1,
    at: read,
    body: {
      Id: id,
      ...(customer ? { CustomerId: customer } : {}),
      Currency: 'EUR',
      StartDate: start,
      LifecycleStatus: 'Active',
      Phases: [{ Type: 'Normal', StartDate: start, PlanId: 'plan-1', PlanVariantId: 'v-1', Quantity: 2 }, ...(end ? [{ Type: 'Inactive', StartDate: end }] : [])],
      ...(end ? { EndDate: end } : {}),
    },
  });
  return [
    contract('running-starts', 'cu-1', between),
    contract('running-ends', 'cu-2', '2025-03-01T00:00:00Z', between),
    contract('running-both', 'cu-running', between),
    // No CustomerId: the spans without a customer are one customer of their own in the MRR.
    contract('no-customer', undefined, '2025-05-01T00:00:00Z'),
  ];
}

/**
 * The customers the contracts name (cu-0 to cu-8): created, then changed once or twice, some
 * deleted, cu-6 deleted before the loader ever read it (its only version a deletion); cu-7 and
 * cu-8 are never read.
 */
function customerHistories(seed: number): AppendedVersion[] {
  const random = createRandom(seed).next;
  const out: AppendedVersion[] = [];
  for (let k = 0; k < 6; k++) {
    const id = `cu-${k}`;
    const created = new Date(Date.UTC(2024, 6, 1) + Math.floor(random() * 600) * 86_400_000);
    const read = (n: number) => new Date(created.getTime() + (n + 1) * 30 * 86_400_000).toISOString();
    const body = (n: number) => ({
      Id: id,
      CreatedAt: created.toISOString(),
      FirstName: `First${k}`,
      LastName: `Last${k}-${n}`,
      CompanyName: n % 2 === 1 ? `Company ${k}` : null,
      EmailAddress: `c${k}.${n}@example.com`,
      ExternalCustomerId: `ext-${k}`,
      Address: { Country: n % 2 === 1 ? 'DE' : 'CH' },
      Locale: 'de-DE',
      IsLocked: n > 1,
    });
    const versions = 1 + Math.floor(random() * 3);
    for (let n = 0; n < versions; n++) out.push({ type: 'Customer', id, version: n + 1, at: read(n), body: body(n) });
    if (k === 2 || random() < 0.3) out.push({ type: 'Customer', id, version: versions + 1, at: read(versions), body: null });
  }
  out.push({ type: 'Customer', id: 'cu-6', version: 1, at: '2025-08-01T00:00:00Z', body: null });
  return out;
}

/** Payment transactions: pending, then succeeded or failed (some retried), some deleted. */
function paymentHistories(seed: number, count: number): AppendedVersion[] {
  const random = createRandom(seed).next;
  const out: AppendedVersion[] = [];
  for (let k = 0; k < count; k++) {
    const id = `pt-${seed}-${k}`;
    const at = new Date(Date.UTC(2025, 0, 1) + Math.floor(random() * 650) * 86_400_000);
    const body = (status: string, when: Date) => ({
      Id: id,
      Amount: 10 + Math.floor(random() * 90),
      Currency: random() < 0.7 ? 'EUR' : 'CHF',
      PaymentProvider: random() < 0.5 ? 'Stripe' : 'GoCardless',
      Status: { Status: status, Timestamp: when.toISOString() },
    });
    const versions: Record<string, unknown>[] = [body('Pending', at)];
    const settled = new Date(at.getTime() + 86_400_000 * (1 + Math.floor(random() * 3)));
    versions.push(body(random() < 0.7 ? 'Succeeded' : 'Failed', settled));
    if (random() < 0.3) versions.push(body('Succeeded', new Date(settled.getTime() + 5 * 86_400_000)));
    versions.forEach((b, i) => out.push({ type: 'PaymentTransaction', id, version: i + 1, at: new Date(at.getTime() + i * 3_600_000 * 30).toISOString(), body: b }));
    if (random() < 0.1) out.push({ type: 'PaymentTransaction', id, version: versions.length + 1, at: new Date(at.getTime() + 40 * 86_400_000).toISOString(), body: null });
  }
  return out;
}

/** A version or a webhook, stored `lateHours` after its time (a sink behind on one topic). */
type EpisodeInput = ({ version: AppendedVersion } | { webhook: AppendedWebhook }) & { lateHours?: number };

function timeOf(x: EpisodeInput): string {
  const at = 'version' in x ? x.version.at : x.webhook.at;
  return new Date(new Date(at).getTime() + (x.lateHours ?? 0) * 3_600_000).toISOString();
}

/**
 * What escalation and dunning episodes read, for about two contracts in three of `histories`
 * (a contract deleted at the end gets none): one or two escalations, each of one to three
 * PaymentEscalated steps (some redelivered, some keys in camelCase), then a
 * PaymentEscalationReset (some received before their last step, some never: open), the
 * contract read after it with a Balance (caused by the reset, or by a CustomerChanged received
 * before it, which names no contract), a payment transaction of the contract with a
 * PaymentSucceeded between the reset and that read (which names only the transaction), a
 * ContractChanged in that window, some of these webhooks stored after the read; dunnings during
 * an escalation and outside any (a DunningCreated for most, levels raised in a second version,
 * one deleted, one moved to another contract), and
 * dunnings without a contract. Dates from 2025 to 2027, so that business now cuts some of them.
 */
function episodeInputs(seed: number, histories: readonly AppendedVersion[][]): EpisodeInput[] {
  const random = createRandom(seed).next;
  const uuid = () => Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');
  const plus = (iso: string, hours: number) => new Date(new Date(iso).getTime() + hours * 3_600_000).toISOString();
  const out: EpisodeInput[] = [];
  const webhook = (event: string, at: string, payload: Record<string, unknown>, lateHours = 0) => {
    const w = { id: uuid(), event, at, payload };
    out.push({ webhook: w, lateHours });
    return w;
  };
  let dunningNo = 0;
  let closed = 0;
  const dunning = (contractId: string | undefined, customerId: string, documentDate: string, notified: boolean) => {
    const id = `d-${seed}-${dunningNo++}`;
    // Some without a DocumentDate (then dated when the service told of it), some read days after
    // their DunningCreated, which the sink may store after the read.
    const dated = random() < 0.7;
    const body = (level: number, contract = contractId) => ({ Id: id, ...(contract ? { ContractId: contract } : {}), CustomerId: customerId, ...(dated ? { DocumentDate: documentDate } : {}), DunningLevel: level });
    out.push({ version: { type: 'Dunning', id, version: 1, at: plus(documentDate, random() < 0.5 ? 2 : 24 * 4), body: body(1) } });
    if (notified) webhook('DunningCreated', plus(documentDate, 1), random() < 0.2 ? { dunningId: id } : { DunningId: id }, random() < 0.4 ? 24 * 10 : 0);
    const r = random();
    if (r < 0.4) out.push({ version: { type: 'Dunning', id, version: 2, at: plus(documentDate, 24 * 10), body: body(2) } });
    else if (r < 0.47) out.push({ version: { type: 'Dunning', id, version: 2, at: plus(documentDate, 24 * 12), body: null } });
    else if (r < 0.55 && contractId) out.push({ version: { type: 'Dunning', id, version: 2, at: plus(documentDate, 24 * 12), body: body(1, histories[0]![0]!.id) } });
  };
  histories.forEach((versions, k) => {
    const last = versions[versions.length - 1]!;
    if (last.body === null || random() < 0.3) return;
    const contractId = last.id;
    const customerId = String(last.body.CustomerId);
    let version = versions.length;
    let due = plus(String(last.body.StartDate), 24 * (20 + Math.floor(random() * 120)));
    const escalations = random() < 0.4 ? 2 : 1;
    for (let e = 0; e < escalations; e++) {
      const steps = 1 + Math.floor(random() * 3);
      const camel = random() < 0.2;
      const stepAt: string[] = [];
      for (let s = 1; s <= steps; s++) {
        const at = plus(due, 24 * 7 * s + Math.floor(random() * 5));
        const payload = camel ? { contractId, customerId, triggerDays: 7 * s, dueDate: due } : { ContractId: contractId, CustomerId: customerId, TriggerDays: 7 * s, DueDate: due };
        webhook('PaymentEscalated', at, payload);
        if (random() < 0.15) webhook('PaymentEscalated', plus(at, 3), payload);
        stepAt.push(at);
      }
      const first = stepAt[0]!;
      if (random() < 0.5) dunning(contractId, customerId, plus(first, 24), random() < 0.8);
      if (random() < 0.4) dunning(contractId, customerId, plus(first, 24 * 3), random() < 0.8);
      if (e === escalations - 1 && random() < 0.35) break; // open
      const overtaken = steps > 1 && random() < 0.25;
      const resetAt = overtaken ? plus(stepAt[steps - 1]!, -2) : plus(stepAt[steps - 1]!, 24 * (3 + Math.floor(random() * 15)));
      const reset = webhook('PaymentEscalationReset', resetAt, { ContractId: contractId, CustomerId: customerId });
      const readAt = plus(resetAt, 1);
      const balance = random() < 0.5 ? 0 : -25;
      const body = { ...last.body, Balance: balance };
      // Each kind of outcome input in turn. "Last": stored after everything else, so after the
      // read and every refresh of the contract (a sink far behind on one topic).
      const last5y = 24 * 365 * 5;
      const kind = closed++ % 7;
      if (kind <= 4) {
        out.push({ version: { type: 'Contract', id: contractId, version: ++version, at: readAt, body, sources: [reset.id] } });
      } else if (kind === 5) {
        // Read before the reset, caused by a webhook that names no contract.
        const cause = webhook('CustomerChanged', plus(first, 5), { CustomerId: customerId }, closed % 2 === 0 ? last5y : 0);
        out.push({ version: { type: 'Contract', id: contractId, version: ++version, at: plus(first, 6), body, sources: [cause.id] } });
      }
      if (kind === 1 || kind === 2) {
        const tx = `ept-${seed}-${k}-${e}`;
        out.push({ version: { type: 'PaymentTransaction', id: tx, version: 1, at: plus(resetAt, -48), body: { Id: tx, ContractId: contractId, Amount: 25, Currency: 'EUR', PaymentProvider: 'Stripe', Status: { Status: 'Succeeded', Timestamp: plus(resetAt, -49) } } } });
        webhook('PaymentSucceeded', plus(resetAt, 0.5), { PaymentTransactionId: tx }, kind === 2 ? last5y : 0);
      } else if (kind === 3) {
        webhook('ContractChanged', plus(resetAt, 0.5), { ContractId: contractId }, last5y);
      }
      due = plus(resetAt, 24 * (60 + Math.floor(random() * 120)));
    }
    if (random() < 0.5) dunning(contractId, customerId, plus(due, 24 * 200), random() < 0.5);
  });
  for (let i = 0; i < 3; i++) dunning(undefined, `cu-${i}`, new Date(Date.UTC(2025, 3 + i * 7, 10)).toISOString(), i > 0);
  return out;
}
