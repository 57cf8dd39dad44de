import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { ANALYST_ROLE } from '../../src/warehouse/resource-types.js';
import { testConfig } from '../helpers/environment.js';
import { mrrDaily, mrrMonthly, mrrMovements, truthPriceBook, type FxRate, type MrrDayRow, type MrrMonthRow, type MrrMovementRow, type PriceBook } from '../helpers/metric-truth.js';
import { scenarioWarehouse } from '../helpers/scenario-warehouse.js';
import { loadScenarioTruth, type ScenarioTruth } from '../helpers/warehouse-truth.js';

/**
 * MRR in money (docs/WAREHOUSE.md, "MRR in money"): mrr_daily, mrr_movements and mrr_monthly
 * against the same definitions computed in TypeScript from the history itself (test/helpers/
 * metric-truth.ts), first on a crafted history with every edge case (an upgrade and a downgrade
 * in mid-month, a price change, a cancellation, a reactivation, a trial that converts and one that
 * does not, yearly, quarterly, weekly and daily fees, a quantity, a variant never read, three
 * currencies, a rate changed in mid-month and a missing rate), then on the sandbox scenario's
 * warehouse, row by row.
 */
const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const s = quoteIdent(config.databaseSchema);

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
});

/** Numbers rounded to 6 decimals (PostgreSQL's numeric division and JavaScript's doubles differ further down). */
const r6 = (v: unknown): number | null => (v === null || v === undefined ? null : Math.round(Number(v) * 1e6) / 1e6);

const dayRow = (r: Record<string, unknown> | MrrDayRow) => ({
  day: r.day instanceof Date ? r.day.toISOString().slice(0, 10) : r.day,
  contract_id: r.contract_id,
  customer_id: r.customer_id,
  currency: r.currency,
  plan_variant_id: r.plan_variant_id,
  quantity: r6(r.quantity),
  mrr: r6(r.mrr),
  mrr_reporting: r6(r.mrr_reporting),
});
const movementRow = (r: Record<string, unknown> | MrrMovementRow) => ({
  month: r.month,
  customer_id: r.customer_id,
  currency: r.currency,
  previous_mrr: r6(r.previous_mrr),
  mrr: r6(r.mrr),
  movement: r.movement,
  amount: r6(r.amount),
  rate: r6('rate' in r ? r.rate : (r as Record<string, unknown>).rate_to_reporting),
});
const monthRow = (r: Record<string, unknown> | MrrMonthRow) => ({
  month: r.month,
  currency: r.currency,
  mrr: r6(r.mrr),
  arr: r6(r.arr),
  customers: Number(r.customers),
  arpa: r6(r.arpa),
  new: r6(r.new),
  expansion: r6(r.expansion),
  contraction: r6(r.contraction),
  churn: r6(r.churn),
  reactivation: r6(r.reactivation),
  starting_mrr: r6(r.starting_mrr),
  nrr: r6(r.nrr),
  grr: r6(r.grr),
  starting_customers: Number(r.starting_customers),
  churned_customers: Number(r.churned_customers),
});

/** The three views as of one moment (one transaction), with `setup` run first in it and rolled back after. */
async function views(db: pg.Pool, schema: string, setup: (c: pg.PoolClient) => Promise<void> = async () => {}) {
  const client = await db.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await setup(client);
    const now = (await client.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
    const q = async (sql: string) => (await client.query(sql)).rows as Record<string, unknown>[];
    const sch = quoteIdent(schema);
    const days = await q(`SELECT to_char(day, 'YYYY-MM-DD') AS day, contract_id, customer_id, currency, plan_variant_id, quantity, mrr, mrr_reporting FROM ${sch}.mrr_daily ORDER BY day, contract_id`);
    const movements = await q(`SELECT to_char(month, 'YYYY-MM-DD') AS month, customer_id, currency, previous_mrr, mrr, movement, amount, rate_to_reporting FROM ${sch}.mrr_movements ORDER BY month, customer_id, currency`);
    const months = await q(
      `SELECT to_char(month, 'YYYY-MM-DD') AS month, currency, mrr, arr, customers, arpa, new, expansion, contraction, churn, reactivation, net_new_mrr, starting_mrr, nrr, grr,
              starting_customers, churned_customers
         FROM ${sch}.mrr_monthly ORDER BY 1, currency NULLS FIRST`,
    );
    await client.query('ROLLBACK');
    return { now, days, movements, months };
  } finally {
    client.release();
  }
}

function compareAll(got: Awaited<ReturnType<typeof views>>, truth: ScenarioTruth, prices: PriceBook, rates: FxRate[]) {
  const days = mrrDaily(truth, got.now, prices, rates);
  const movements = mrrMovements(days, got.now, rates);
  const months = mrrMonthly(movements);
  expect(got.days.map(dayRow)).toEqual(days.map(dayRow));
  expect(got.movements.map(movementRow)).toEqual(movements.map(movementRow));
  // Sorted as the query sorts: the reporting row (currency NULL) first.
  const byMonth = [...months].sort((a, b) => a.month.localeCompare(b.month) || (a.currency === null ? -1 : b.currency === null ? 1 : a.currency.localeCompare(b.currency)));
  expect(got.months.map(monthRow)).toEqual(byMonth.map(monthRow));
  return { days, movements, months };
}

describe('MRR on a crafted history', () => {
  let offset = 0;
  async function insert(type: string, id: string, version: number, fetchedAt: string, body: object | null, customerId: string | null = null) {
    await pool.query(
      `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset)
       VALUES ($1, $2, $3, $4, $5::jsonb IS NULL, $5, $6, '{}', '{}', $7, 0, $8)`,
      [type, id, version, fetchedAt, body, `h-${id}-${version}`, customerId, offset++],
    );
  }
  const phase = (type: string, start: string, variant: string | null, quantity = 1) => ({ Type: type, StartDate: start, PlanId: variant && `plan-of-${variant}`, PlanVariantId: variant, Quantity: quantity });
  const inactive = (start: string) => ({ Type: 'Inactive', StartDate: start, PlanId: null, PlanVariantId: null, Quantity: 1 });

  /** The crafted history as the truth helpers read it: each object's latest body, and the variants' prices as read. */
  const histories: ScenarioTruth['histories'] = [];
  const prices: PriceBook = new Map();
  const rates: FxRate[] = [
    { currency: 'EUR', validFrom: '2025-01-01', rate: 1 },
    { currency: 'CHF', validFrom: '2025-01-01', rate: 1.05 },
    { currency: 'CHF', validFrom: '2025-03-01', rate: 1.1 },
    // Mid-month: April's amounts are at the rate of April's end.
    { currency: 'CHF', validFrom: '2025-04-10', rate: 1.12 },
    // No USD rate for January: the reporting amounts of that month are unknown, not lower.
    { currency: 'USD', validFrom: '2025-02-01', rate: 0.9 },
  ];

  async function variant(id: string, versions: { at: string; fee: number; unit: string; quantity: number }[]) {
    let v = 0;
    for (const x of versions) await insert('PlanVariant', id, ++v, x.at, { Id: id, PlanId: `plan-of-${id}`, RecurringFee: x.fee, FeePeriod: { Unit: x.unit, Quantity: x.quantity } });
    prices.set(id, versions.map((x, i) => ({ from: i === 0 ? -Infinity : Date.parse(x.at), fee: x.fee, unit: x.unit, quantity: x.quantity })));
  }
  async function contract(id: string, customer: string, currency: string, startDate: string, phases: object[], endDate: string | null = null) {
    const body = { Id: id, CustomerId: customer, Currency: currency, StartDate: startDate, EndDate: endDate, Phases: phases };
    // An earlier version without the later changes first: only the latest one is read for MRR.
    await insert('Contract', id, 1, startDate, { ...body, EndDate: null, Phases: phases.slice(0, 1) }, customer);
    await insert('Contract', id, 2, '2025-06-01T00:00:00Z', body, customer);
    histories.push({ type: 'Contract', id, deleted: false, states: [{ version: 2, body, deleted: false, simulatedAt: startDate, wallAt: startDate }] });
  }

  beforeAll(async () => {
    await migrate(pool, { schema: config.databaseSchema, log });
    // basic: 10 a month, 12 from when the loader read the new price (10 March, noon).
    await variant('v-basic', [
      { at: '2025-01-01T00:00:00Z', fee: 10, unit: 'Month', quantity: 1 },
      { at: '2025-03-10T12:00:00Z', fee: 12, unit: 'Month', quantity: 1 },
    ]);
    await variant('v-pro', [{ at: '2025-01-01T00:00:00Z', fee: 30, unit: 'Month', quantity: 1 }]);
    // 240 a year: 20 a month. 45 a quarter: 15 a month.
    await variant('v-annual', [{ at: '2025-01-01T00:00:00Z', fee: 240, unit: 'Year', quantity: 1 }]);
    await variant('v-quarter', [{ at: '2025-01-01T00:00:00Z', fee: 45, unit: 'Month', quantity: 3 }]);
    // 7 a week: 7 x 52 / 12 a month; 2 a day every two days: 365 / 12.
    await variant('v-weekly', [{ at: '2025-01-01T00:00:00Z', fee: 7, unit: 'Week', quantity: 1 }]);
    await variant('v-daily', [{ at: '2025-01-01T00:00:00Z', fee: 2, unit: 'Day', quantity: 2 }]);
    // cu-1: basic from 10 January, upgraded to pro on 15 February at noon.
    await contract('c-up', 'cu-1', 'EUR', '2025-01-10T09:00:00Z', [phase('Normal', '2025-01-10T09:00:00Z', 'v-basic'), phase('Normal', '2025-02-15T12:00:00Z', 'v-pro')]);
    // cu-2: pro from 5 January, downgraded to basic on 20 February; basic's price rises in March.
    await contract('c-down', 'cu-2', 'EUR', '2025-01-05T00:00:00Z', [phase('Normal', '2025-01-05T00:00:00Z', 'v-pro'), phase('Normal', '2025-02-20T08:00:00Z', 'v-basic')]);
    // cu-3: two yearly seats in CHF from 20 January, cancelled to end on 15 April (paying until then).
    await contract('c-cancel', 'cu-3', 'chf', '2025-01-20T00:00:00Z', [phase('Normal', '2025-01-20T00:00:00Z', 'v-annual', 2), inactive('2025-04-15T00:00:00Z')], '2025-04-15T00:00:00Z');
    // cu-4: quarterly in USD, ended 10 February; a new contract from 3 May: a reactivation.
    await contract('c-gone', 'cu-4', 'USD', '2025-01-01T00:00:00Z', [phase('Normal', '2025-01-01T00:00:00Z', 'v-quarter'), inactive('2025-02-10T00:00:00Z')], '2025-02-10T00:00:00Z');
    await contract('c-back', 'cu-4', 'USD', '2025-05-03T00:00:00Z', [phase('Normal', '2025-05-03T00:00:00Z', 'v-quarter')]);
    // cu-5: a trial from 1 January that converts on 15 January. cu-6: a trial cancelled in its trial.
    await contract('c-trial', 'cu-5', 'EUR', '2025-01-01T00:00:00Z', [phase('Trial', '2025-01-01T00:00:00Z', 'v-pro'), phase('Normal', '2025-01-15T00:00:00Z', 'v-pro')]);
    await contract('c-lost', 'cu-6', 'EUR', '2025-02-01T00:00:00Z', [phase('Trial', '2025-02-01T00:00:00Z', 'v-pro'), inactive('2025-02-15T00:00:00Z')], '2025-02-15T00:00:00Z');
    // cu-8: weekly and daily fees, from June.
    await contract('c-weekly', 'cu-8', 'EUR', '2025-06-02T00:00:00Z', [phase('Normal', '2025-06-02T00:00:00Z', 'v-weekly')]);
    await contract('c-daily', 'cu-8', 'EUR', '2025-06-03T00:00:00Z', [phase('Normal', '2025-06-03T00:00:00Z', 'v-daily')]);
    // cu-7: on a variant the loader never read: its days are listed unpriced, and it moves nothing.
    await contract('c-unread', 'cu-7', 'EUR', '2025-03-03T00:00:00Z', [phase('Normal', '2025-03-03T00:00:00Z', 'v-unread')]);
    for (const x of rates) await pool.query(`INSERT INTO ${s}.fx_rates (currency, valid_from, rate_to_reporting) VALUES ($1, $2, $3)`, [x.currency, x.validFrom, x.rate]);
  });

  it('every row of mrr_daily, mrr_movements and mrr_monthly equals the computation from the history', async () => {
    const got = await views(pool, config.databaseSchema);
    const { days, movements } = compareAll(got, { histories, events: [] }, prices, rates);
    expect(days.length).toBeGreaterThan(0);
    expect(movements.length).toBeGreaterThan(0);
  });

  it('a mid-month upgrade and downgrade change MRR on their day; a price change from the day it was read', async () => {
    const { days } = await views(pool, config.databaseSchema);
    const mrr = (contract: string, day: string) => r6(days.find((d) => d.contract_id === contract && d.day === day)?.mrr ?? 0);
    expect([mrr('c-up', '2025-02-14'), mrr('c-up', '2025-02-15')]).toEqual([10, 30]);
    expect([mrr('c-down', '2025-02-19'), mrr('c-down', '2025-02-20')]).toEqual([30, 10]);
    expect([mrr('c-down', '2025-03-09'), mrr('c-down', '2025-03-10')]).toEqual([10, 12]);
    // Yearly fee x 2 seats, until the day before the EndDate; quarterly fee per month.
    expect([mrr('c-cancel', '2025-04-14'), mrr('c-cancel', '2025-04-15')]).toEqual([40, 0]);
    expect(mrr('c-gone', '2025-01-31')).toBe(15);
    expect([mrr('c-weekly', '2025-06-30'), mrr('c-daily', '2025-06-30')]).toEqual([r6((7 * 52) / 12), r6(365 / 12)]);
    // A trial is no MRR; the converted contract pays from its conversion day.
    expect([mrr('c-trial', '2025-01-14'), mrr('c-trial', '2025-01-15')]).toEqual([0, 30]);
    expect(days.filter((d) => d.contract_id === 'c-lost')).toEqual([]);
    const unread = days.filter((d) => d.contract_id === 'c-unread');
    expect(unread.length).toBeGreaterThan(0);
    expect(unread.filter((d) => d.mrr !== null)).toEqual([]);
  });

  it('movements per customer and month: new, expansion, contraction, churn, reactivation; a trial that never paid is none of them', async () => {
    const { movements } = await views(pool, config.databaseSchema);
    const first = movements.filter((m) => String(m.month) <= '2025-05-01' && m.movement !== 'unchanged').map((m) => [m.month, m.customer_id, m.movement, r6(m.amount)]);
    expect(first).toEqual([
      ['2025-01-01', 'cu-1', 'new', 10],
      ['2025-01-01', 'cu-2', 'new', 30],
      ['2025-01-01', 'cu-3', 'new', 40],
      ['2025-01-01', 'cu-4', 'new', 15],
      ['2025-01-01', 'cu-5', 'new', 30],
      ['2025-02-01', 'cu-1', 'expansion', 20],
      ['2025-02-01', 'cu-2', 'contraction', -20],
      ['2025-02-01', 'cu-4', 'churn', -15],
      ['2025-03-01', 'cu-2', 'expansion', 2],
      ['2025-04-01', 'cu-3', 'churn', -40],
      ['2025-05-01', 'cu-4', 'reactivation', 15],
    ]);
    expect(movements.filter((m) => m.customer_id === 'cu-6' || m.customer_id === 'cu-7')).toEqual([]);
  });

  it('reporting currency: amounts at the rate of the month end, a rate change moves no customer, a missing rate leaves the month unknown', async () => {
    const { movements, months } = await views(pool, config.databaseSchema);
    const chf = movements.filter((m) => m.customer_id === 'cu-3').map((m) => [m.month, m.movement, r6(m.rate_to_reporting)]);
    expect(chf).toEqual([
      ['2025-01-01', 'new', 1.05],
      ['2025-02-01', 'unchanged', 1.05],
      ['2025-03-01', 'unchanged', 1.1],
      ['2025-04-01', 'churn', 1.12],
    ]);
    const reporting = (month: string) => months.find((m) => m.month === month && m.currency === null)!;
    expect(r6(reporting('2025-01-01').mrr)).toBeNull();
    // February: EUR 30 + 10 + 30, CHF 40 x 1.05, USD nothing (churned): 112 from 4 paying customers.
    expect([r6(reporting('2025-02-01').mrr), Number(reporting('2025-02-01').customers), r6(reporting('2025-02-01').arpa)]).toEqual([112, 4, 28]);
    // March: starting (at March's rates) 30 + 10 + 44 + 30 = 114; cu-2 +2: NRR 116/114, GRR 1.
    expect([r6(reporting('2025-03-01').starting_mrr), r6(reporting('2025-03-01').nrr), r6(reporting('2025-03-01').grr)]).toEqual([114, r6(116 / 114), 1]);
    // April: cu-3 churns 40 x 1.12 of 30 + 12 + 44.8 + 30 (at the rate of April's end): GRR 72/116.8.
    expect([r6(reporting('2025-04-01').churn), r6(reporting('2025-04-01').grr)]).toEqual([-44.8, r6(72 / 116.8)]);
  });

  it('the analyst role reads the MRR views and keeps the rates', async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE ${ANALYST_ROLE}`);
      for (const v of ['mrr_daily', 'mrr_movements', 'mrr_monthly']) await client.query(`SELECT * FROM ${s}.${v} LIMIT 1`);
      await client.query(`INSERT INTO ${s}.fx_rates VALUES ('GBP', '2025-01-01', 1.17)`);
      await client.query(`UPDATE ${s}.fx_rates SET rate_to_reporting = 1.18 WHERE currency = 'GBP'`);
      await client.query(`DELETE FROM ${s}.fx_rates WHERE currency = 'GBP'`);
      await expect(client.query(`INSERT INTO ${s}.fx_rates VALUES ('eur', '2025-01-01', 1)`)).rejects.toMatchObject({ code: '23514' });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });
});

describe('MRR on the sandbox scenario', () => {
  let db: pg.Pool;
  let schema: string;
  let truth: ScenarioTruth;
  beforeAll(async () => {
    const scenario = await scenarioWarehouse();
    db = createPool({ databaseUrl: scenario.databaseUrl, applicationName: 'test', log });
    schema = scenario.schema;
    truth = await loadScenarioTruth(db, scenario.schema);
  }, 300_000);
  afterAll(async () => {
    await db?.end();
  });

  // The rates are the analyst's; they exist only in the test's transaction (the scenario's
  // warehouse is shared, read-only for its users).
  const rates: FxRate[] = [
    { currency: 'EUR', validFrom: '2024-01-01', rate: 1 },
    { currency: 'CHF', validFrom: '2024-01-01', rate: 1.04 },
    { currency: 'CHF', validFrom: '2025-03-01', rate: 1.07 },
    { currency: 'USD', validFrom: '2024-01-01', rate: 0.92 },
  ];
  const setRates = async (c: pg.PoolClient) => {
    for (const x of rates) await c.query(`INSERT INTO ${quoteIdent(schema)}.fx_rates (currency, valid_from, rate_to_reporting) VALUES ($1, $2, $3)`, [x.currency, x.validFrom, x.rate]);
  };

  it('every contract-day, customer-month and month row equals the computation from the sandbox truth', async () => {
    const got = await views(db, schema, setRates);
    const { days, movements, months } = compareAll(got, truth, truthPriceBook(truth), rates);
    // The scenario exercises what the comparison is about.
    const kinds = new Set(movements.map((m) => m.movement));
    for (const k of ['new', 'expansion', 'contraction', 'churn']) expect(kinds, k).toContain(k);
    expect(new Set(days.map((d) => d.currency))).toEqual(new Set(['EUR', 'CHF', 'USD']));
    expect(months.some((m) => m.currency === null && m.mrr !== null && m.mrr > 0)).toBe(true);
  });

  it('each month, the movements add up to the change of MRR in its currency', async () => {
    const { months } = await views(db, schema, setRates);
    const byCurrency = new Map<string, Record<string, unknown>[]>();
    for (const m of months) if (m.currency !== null) byCurrency.set(String(m.currency), [...(byCurrency.get(String(m.currency)) ?? []), m]);
    for (const [currency, list] of byCurrency) {
      for (const m of list) expect(r6(Number(m.starting_mrr) + Number(m.net_new_mrr)), `${currency} ${String(m.month)}`).toBe(r6(m.mrr));
    }
  });
});
