import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { runBackfill } from '../../src/backfill/backfill.js';
import { LISTABLE_TYPES, RESOURCE_TYPES } from '../../src/billing-api/resource-types.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { ANALYST_ROLE } from '../../src/warehouse/resource-types.js';
import { cameBy, cameOn, contractStates, customerStatuses, date, field, type BusinessState, type ContractOnDate, type CustomerStatus } from '../helpers/metric-truth.js';
import { scenarioWarehouse } from '../helpers/scenario-warehouse.js';
import { startSimulatedPipeline, type SimulatedPipeline } from '../helpers/simulated-pipeline.js';
import { waitFor } from '../helpers/wait-for.js';
import { loadScenarioTruth, type ScenarioTruth } from '../helpers/warehouse-truth.js';

/**
 * State on business dates (docs/WAREHOUSE.md, "Business dates"): contract_state_at/_on and
 * customer_state_at/_on answer "what did we have on date X" on the service's clock, checked
 * against the sandbox's truth on a warehouse filled by a backfill alone (every version read on
 * one day, after the fact) and on the scenario warehouse filled by webhooks. customer_overview
 * and subscription_overview keep deleted customers and contracts.
 */
const log = createLogger('warn');

const toState = (s: string): BusinessState => (s === 'active' || s === 'cancelled_running' ? 'running' : (s as BusinessState));

/** Days to ask about: the first StartDate of the truth, and a spread of days after it up to the last. */
function daysOf(truth: ScenarioTruth): string[] {
  const starts = truth.histories
    .filter((h) => h.type === 'Contract' && !h.deleted)
    .map((h) => date(field(h.states.at(-1)?.body, 'StartDate')))
    .filter((d): d is Date => d !== null)
    .map((d) => d.getTime());
  const first = Math.min(...starts);
  const last = Math.max(...starts);
  return [...new Set([0, 1, 10, 14, 30, 45, 60, 90, 120, 180, 365].map((n) => first + n * 86_400_000).filter((t) => t <= last + 90 * 86_400_000))].map((t) => new Date(t).toISOString().slice(0, 10));
}

/** Instants to ask about: `n` of the phase starts and EndDates of the truth's contracts, evenly spread from the first to the last, and the millisecond before each. */
function instantsOf(truth: ScenarioTruth, n: number): Date[] {
  const dates = new Set<number>();
  for (const h of truth.histories) {
    if (h.type !== 'Contract' || h.deleted) continue;
    const body = h.states.at(-1)?.body;
    const phases = field(body, 'Phases');
    for (const p of Array.isArray(phases) ? phases : []) {
      const d = date(field(p, 'StartDate'));
      if (d) dates.add(d.getTime());
    }
    const end = date(field(body, 'EndDate'));
    if (end) dates.add(end.getTime());
  }
  const sorted = [...dates].sort((a, b) => a - b);
  const picked = [...new Set(Array.from({ length: n }, (_, i) => sorted[Math.round((i * (sorted.length - 1)) / (n - 1))]!))];
  return picked.flatMap((t) => [new Date(t - 1), new Date(t)]);
}

type ContractRow = { contract_id: string; customer_id: string | null; state: string; plan_id: string | null };

async function contractsAt(db: pg.Pool, schema: string, sql: string, arg: string | Date): Promise<Map<string, ContractOnDate>> {
  const { rows } = await db.query<ContractRow>(`SELECT contract_id, customer_id, state, plan_id FROM ${quoteIdent(schema)}.${sql}($1) WHERE deleted_at IS NULL`, [arg]);
  return new Map(rows.map((r) => [r.contract_id, { customerId: r.customer_id, state: toState(r.state), plan: r.plan_id }]));
}

async function customersAt(db: pg.Pool, schema: string, sql: string, arg: string | Date): Promise<Map<string, CustomerStatus>> {
  const { rows } = await db.query<{ customer_id: string; status: CustomerStatus }>(`SELECT customer_id, status FROM ${quoteIdent(schema)}.${sql}($1) WHERE deleted_at IS NULL`, [arg]);
  return new Map(rows.map((r) => [r.customer_id, r.status]));
}

const sorted = <T>(m: Map<string, T>) => Object.fromEntries([...m].sort(([a], [b]) => a.localeCompare(b)));

describe('on a warehouse filled by a backfill only', () => {
  let run: SimulatedPipeline;
  let truth: ScenarioTruth;
  let schema: string;

  beforeAll(async () => {
    run = await startSimulatedPipeline({ name: 'business-dates-test', sim: { seed: 20251126 } });
    schema = run.config.databaseSchema;
    // The service's whole history happens before the loader hears of it: no webhook reaches it.
    run.sim.setWebhookUrl(undefined);
    const result = await run.sim.runScenario({ name: 'default', customers: 12 });
    expect(result.completed).toBe(true);
    const live = LISTABLE_TYPES.flatMap((type) => run.sim.ids(type).filter((id) => run.sim.current(type, id)).map((id) => ({ type, id })));
    await runBackfill(
      { kafka: run.kafka, api: run.api, log: silentLogger },
      { topicPrefix: run.config.topicPrefix, types: [...LISTABLE_TYPES], pageSize: 50 },
    );
    await waitFor(
      async () => {
        const { rows } = await run.pool.query<{ n: number }>(`SELECT count(DISTINCT (resource_type, resource_id))::int AS n FROM ${quoteIdent(schema)}.resource_versions`);
        return rows[0]!.n >= live.length;
      },
      { timeoutMs: 120_000, intervalMs: 500, what: 'every live object loaded by the backfill' },
    );
    truth = { histories: RESOURCE_TYPES.flatMap((type) => run.sim.ids(type).map((id) => run.sim.history(type, id)!)), events: run.sim.events() };
  }, 300_000);

  afterAll(async () => {
    await run?.pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    await run?.stop();
  });

  it('contract_as_of, on the loader\'s clock, knows nothing before the backfill; contract_state_on answers each day as the truth', async () => {
    const days = daysOf(truth);
    expect(days.length).toBeGreaterThan(5);
    const before = await run.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.contract_as_of($1)`, [`${days[4]}T23:59:59Z`]);
    expect(before.rows).toEqual([{ n: 0 }]);
    let counted = 0;
    for (const day of days) {
      const want = contractStates(truth, cameOn(day));
      counted += want.size;
      expect(sorted(await contractsAt(run.pool, schema, 'contract_state_on', day)), day).toEqual(sorted(want));
    }
    expect(counted).toBeGreaterThan(0);
  });

  it('contract_state_at: the state at an instant, on either side of each phase start and EndDate', async () => {
    const states = new Set<BusinessState>();
    for (const at of instantsOf(truth, 12)) {
      const want = contractStates(truth, cameBy(at));
      for (const c of want.values()) states.add(c.state);
      expect(sorted(await contractsAt(run.pool, schema, 'contract_state_at', at)), at.toISOString()).toEqual(sorted(want));
    }
    expect([...states].sort()).toEqual(['ended', 'in_trial', 'running']);
  });

  it('customer_state_on: each customer created by the day, with its contracts\' status, as the truth', async () => {
    const seen = new Set<CustomerStatus>();
    for (const day of daysOf(truth)) {
      const want = customerStatuses(truth, cameOn(day));
      for (const s of want.values()) seen.add(s);
      expect(sorted(await customersAt(run.pool, schema, 'customer_state_on', day)), day).toEqual(sorted(want));
    }
    expect(seen.has('paying') && seen.has('in_trial')).toBe(true);
  });

  it('the functions keep working when their schema is renamed (replay --rebuild swaps schemas by name)', async () => {
    const before = await run.pool.query(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.customer_state_on('2025-06-30')`);
    expect(before.rows[0].n).toBeGreaterThan(0);
    const renamed = `${schema}_renamed`;
    await run.pool.query(`ALTER SCHEMA ${quoteIdent(schema)} RENAME TO ${quoteIdent(renamed)}`);
    try {
      const after = await run.pool.query(`SELECT count(*)::int AS n FROM ${quoteIdent(renamed)}.customer_state_on('2025-06-30')`);
      expect(after.rows).toEqual(before.rows);
    } finally {
      await run.pool.query(`ALTER SCHEMA ${quoteIdent(renamed)} RENAME TO ${quoteIdent(schema)}`);
    }
  });

  it('the analyst role calls the business-date functions and reads the overviews', async () => {
    const client = await run.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE ${ANALYST_ROLE}`);
      const s = quoteIdent(schema);
      const { rows } = await client.query(
        `SELECT (SELECT count(*)::int FROM ${s}.contract_state_on('2025-06-30')) AS contracts, (SELECT count(*)::int FROM ${s}.customer_state_on('2025-06-30')) AS customers,
                (SELECT count(*)::int FROM ${s}.subscription_overview) AS subscriptions, (SELECT count(*)::int FROM ${s}.customer_overview) AS overview,
                (SELECT count(*)::int FROM ${s}.contract_segments) AS segments`,
      );
      await client.query('ROLLBACK');
      expect(rows[0].contracts).toBeGreaterThan(0);
      expect(rows[0].customers).toBeGreaterThan(0);
      expect(rows[0].subscriptions).toBeGreaterThan(0);
      expect(rows[0].overview).toBeGreaterThan(0);
      expect(rows[0].segments).toBeGreaterThan(0);
    } finally {
      client.release();
    }
  });
});

describe('on the sandbox scenario\'s warehouse (webhooks)', () => {
  let db: pg.Pool;
  let schema: string;
  let w: string;
  let truth: ScenarioTruth;
  beforeAll(async () => {
    const scenario = await scenarioWarehouse();
    db = createPool({ databaseUrl: scenario.databaseUrl, applicationName: 'test', log });
    schema = scenario.schema;
    w = quoteIdent(schema);
    truth = await loadScenarioTruth(db, schema);
  }, 300_000);
  afterAll(async () => {
    await db?.end();
  });

  it('contract_state_on and customer_state_on: the contracts and customers the service still has, each day, as the truth', async () => {
    for (const day of daysOf(truth)) {
      expect(sorted(await contractsAt(db, schema, 'contract_state_on', day)), day).toEqual(sorted(contractStates(truth, cameOn(day))));
      expect(sorted(await customersAt(db, schema, 'customer_state_on', day)), day).toEqual(sorted(customerStatuses(truth, cameOn(day))));
    }
  });

  it('subscription_overview and customer_overview: every contract has its customer\'s row, a deleted customer with its deletion time', async () => {
    const { rows: orphans } = await db.query(`SELECT o.contract_id FROM ${w}.subscription_overview o LEFT JOIN ${w}.customer_overview c USING (customer_id) WHERE c.customer_id IS NULL`);
    expect(orphans).toEqual([]);
    const { rows: contracts } = await db.query<{ id: string }>(`SELECT DISTINCT resource_id AS id FROM ${w}.contract_history WHERE NOT deleted`);
    const { rows: overview } = await db.query<{ contract_id: string; deleted: boolean; customer_deleted: boolean | null }>(`SELECT contract_id, deleted, customer_deleted FROM ${w}.subscription_overview`);
    // Every contract the loader read with a StartDate (all of the sandbox's have one), deleted or not.
    expect(overview.map((r) => r.contract_id).sort()).toEqual(contracts.map((r) => r.id).sort());

    const gone = new Set(truth.histories.filter((h) => h.type === 'Customer' && h.deleted).map((h) => h.id));
    const goneContracts = new Set(truth.histories.filter((h) => h.type === 'Contract' && h.deleted).map((h) => h.id));
    const { rows: customers } = await db.query<{ customer_id: string; deleted: boolean; deleted_at: Date | null }>(`SELECT customer_id, deleted, deleted_at FROM ${w}.customer_overview`);
    expect(customers.filter((c) => gone.has(c.customer_id)).length).toBeGreaterThan(0);
    for (const c of customers) {
      expect(c.deleted, c.customer_id).toBe(gone.has(c.customer_id));
      expect(c.deleted_at !== null, c.customer_id).toBe(gone.has(c.customer_id));
    }
    for (const r of overview) expect(r.deleted, r.contract_id).toBe(goneContracts.has(r.contract_id));
  });

  it('subscription_overview: the state now of each contract the service still has, as the truth', async () => {
    const client = await db.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const now = (await client.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
      const { rows } = await client.query<ContractRow>(`SELECT contract_id, customer_id, state, plan_id FROM ${w}.subscription_overview WHERE NOT deleted AND state <> 'not_started'`);
      const { rows: statuses } = await client.query<{ customer_id: string; status: CustomerStatus }>(`SELECT customer_id, status FROM ${w}.customer_overview WHERE NOT deleted`);
      await client.query('COMMIT');
      const got = new Map(rows.map((r) => [r.contract_id, { customerId: r.customer_id, state: toState(r.state), plan: r.plan_id }]));
      expect(sorted(got)).toEqual(sorted(contractStates(truth, cameBy(now))));
      expect(sorted(new Map(statuses.map((r) => [r.customer_id, r.status])))).toEqual(sorted(customerStatuses(truth, cameBy(now))));
    } finally {
      client.release();
    }
  });
});
