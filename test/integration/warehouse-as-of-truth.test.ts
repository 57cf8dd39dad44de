import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_TYPES, RESOURCE_TYPE_INFO } from '../../src/billing-api/resource-types.js';
import type { Config } from '../../src/config.js';
import { quoteIdent } from '../../src/db/pool.js';
import type { Simulator } from '../../src/simulator/simulator.js';
import { drainPipeline } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';
import { startSimulatedPipeline, type SimulatedPipeline } from '../helpers/simulated-pipeline.js';
import { SENTINEL_PREFIX, canonical } from '../helpers/warehouse-truth.js';

/**
 * `<t>_as_of` against the simulator's truth store, through the whole pipeline under the default
 * scenario with late, duplicated and reordered deliveries. The scenario runs in two parts, the
 * pipeline caught up after each: at those moments every state the API served has been fetched, so
 * the warehouse's state as of such a moment, asked at the end, is exactly the truth at that
 * wall-clock time.
 */
let run: SimulatedPipeline;
let config: Config;
let pool: pg.Pool;
let kafka: Kafka;
let sim: Simulator;

beforeAll(async () => {
  run = await startSimulatedPipeline({
    name: 'as-of-truth-test',
    sim: { seed: 20250202, delivery: { retryBaseDelayMs: 100, lateRate: 0.1, lateDelayMs: 1000, duplicateRate: 0.2, reorderRate: 0.3, reorderWindowMs: 500 } },
  });
  ({ config, pool, kafka, sim } = run);
}, 120_000);

afterAll(async () => {
  await run?.stop();
});

/**
 * Per type, `id -> canonical body` of the objects alive at wall-clock `at` in the truth store,
 * among those the loader knows (some history at all): no webhook names an invoice draft except
 * in a correction, so most are never fetched (e2e-truth.test.ts checks that every object a
 * webhook named has a history).
 */
async function truthAt(at: Date): Promise<Map<string, Map<string, string>>> {
  const out = new Map<string, Map<string, string>>();
  for (const type of RESOURCE_TYPES) {
    const view = `${quoteIdent(config.databaseSchema)}.${quoteIdent(`${RESOURCE_TYPE_INFO[type].table}_history`)}`;
    const known = new Set((await pool.query<{ id: string }>(`SELECT DISTINCT resource_id AS id FROM ${view}`)).rows.map((r) => r.id));
    const alive = new Map<string, string>();
    for (const id of sim.ids(type)) {
      if (!known.has(id)) continue;
      // The account's escalation settings and its catalog exist from the start, but the loader
      // learns of such an object only from the first webhook that names it (a PaymentEscalated, a
      // Plan…/PlanVariant…/Component… event) or a backfill, which this scenario does not run:
      // before that, nothing to have read.
      if (LEARNT_FROM_EVENTS.has(type) && !named(id, at)) continue;
      const states = sim.history(type, id)?.states ?? [];
      const state = states.filter((s) => new Date(s.wallAt) <= at).at(-1);
      if (state && !state.deleted) alive.set(id, canonical(state.body));
    }
    out.set(type, alive);
  }
  return out;
}

/** Types present from the sandbox's start whose objects the loader first reads when a webhook names them. */
const LEARNT_FROM_EVENTS = new Set<string>(['PaymentEscalationProcess', 'Plan', 'PlanVariant', 'PlanGroup', 'Component']);

/** Whether an event emitted by wall-clock `at` names `id` (in any field). */
function named(id: string, at: Date): boolean {
  return sim.events().some((e) => new Date(e.wallAt) <= at && Object.values(e.payload).includes(id));
}

async function warehouseAt(at: Date): Promise<Map<string, Map<string, string>>> {
  const out = new Map<string, Map<string, string>>();
  for (const type of RESOURCE_TYPES) {
    const fn = `${quoteIdent(config.databaseSchema)}.${quoteIdent(`${RESOURCE_TYPE_INFO[type].table}_as_of`)}`;
    const { rows } = await pool.query<{ resource_id: string; body: unknown }>(`SELECT resource_id, body FROM ${fn}($1)`, [at]);
    out.set(type, new Map(rows.filter((r) => !r.resource_id.startsWith(SENTINEL_PREFIX)).map((r) => [r.resource_id, canonical(r.body)])));
  }
  return out;
}

function differences(truth: Map<string, Map<string, string>>, warehouse: Map<string, Map<string, string>>): string[] {
  const problems: string[] = [];
  for (const type of RESOURCE_TYPES) {
    const t = truth.get(type) ?? new Map<string, string>();
    const w = warehouse.get(type) ?? new Map<string, string>();
    for (const [id, body] of t) if (w.get(id) !== body) problems.push(`${type}:${id} ${w.has(id) ? 'has another state' : 'is missing'}`);
    for (const id of w.keys()) if (!t.has(id)) problems.push(`${type}:${id} is not alive in the truth`);
  }
  return problems;
}

/**
 * A moment at which the warehouse had caught up with the truth: the pipeline drained, then (a
 * late delivery may still be in flight after the drain) the state as of now equals the truth now.
 * The test proper is that as_of still gives that state after the second part has added versions.
 */
async function settledMoment(): Promise<Date> {
  await drainPipeline({ kafka, config, pool, sim, timeoutMs: 60_000 });
  let moment = new Date();
  await waitFor(
    async () => {
      moment = new Date();
      return differences(await truthAt(moment), await warehouseAt(moment)).length === 0;
    },
    { timeoutMs: 30_000, intervalMs: 250, what: 'warehouse caught up with the truth' },
  );
  return moment;
}

describe('<t>_as_of equals the truth at several moments of the default scenario', () => {
  it('before, between and after two parts of the scenario, and notified_at precedes each webhook-caused version', async () => {
    const before = new Date();
    const first = await sim.runScenario({ name: 'default', customers: 12, stepDelayMs: 10 });
    expect(first.completed).toBe(true);
    const middle = await settledMoment();
    const second = await sim.runScenario({ name: 'default', customers: 12, stepDelayMs: 10 });
    expect(second.completed).toBe(true);
    const after = await settledMoment();

    expect(differences(await truthAt(before), await warehouseAt(before)), 'before').toEqual([]);
    const atMiddle = await truthAt(middle);
    const atEnd = await truthAt(after);
    expect(differences(atMiddle, await warehouseAt(middle)), 'middle').toEqual([]);
    expect(differences(atEnd, await warehouseAt(after)), 'after').toEqual([]);
    // Not vacuous: the moments differ, some objects were deleted, and contracts changed after the middle.
    const size = (m: Map<string, Map<string, string>>) => [...m.values()].reduce((n, x) => n + x.size, 0);
    expect(size(atMiddle)).toBeGreaterThan(20);
    expect(size(atEnd)).toBeGreaterThan(size(atMiddle));
    expect(RESOURCE_TYPES.some((type) => sim.ids(type).some((id) => sim.history(type, id)?.deleted))).toBe(true);

    // notified_at: the ingress's receipt of the earliest webhook that led to the version, before the fetch.
    const s = quoteIdent(config.databaseSchema);
    const { rows } = await pool.query<{ n: string; after_fetch: string; after_first: string }>(
      `SELECT count(*) AS n,
              count(*) FILTER (WHERE h.notified_at > h.valid_from OR h.notified_at > h.loaded_at) AS after_fetch,
              count(*) FILTER (WHERE h.notified_at IS NULL OR h.notified_at > (SELECT w.received_at FROM ${s}.webhook_events w WHERE w.event_id = h.source_event_id)) AS after_first
         FROM ${s}.contract_history h WHERE h.source_event_id IS NOT NULL`,
    );
    expect(Number(rows[0]!.n)).toBeGreaterThan(10);
    expect(Number(rows[0]!.after_fetch)).toBe(0);
    expect(Number(rows[0]!.after_first)).toBe(0);
    const backfill = await pool.query(`SELECT count(*)::int AS n FROM ${s}.contract_history WHERE source_event_id IS NULL AND notified_at IS NOT NULL`);
    expect(backfill.rows).toEqual([{ n: 0 }]);
  }, 240_000);
});
