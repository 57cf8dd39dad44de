import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/backfill/backfill.js';
import { quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { PLANS } from '../../src/simulator/catalog.js';
import { waitFor } from '../helpers/wait-for.js';
import { startSimulatedPipeline, type SimulatedPipeline } from '../helpers/simulated-pipeline.js';

// The catalog (plans, plan variants, plan groups, components) as resource types with history:
// read by backfill and on their events, into <type>_history/_current with typed columns.
const CATALOG = ['Plan', 'PlanVariant', 'PlanGroup', 'Component'] as const;

let p: SimulatedPipeline;
let s: string;
beforeAll(async () => {
  p = await startSimulatedPipeline({ name: 'catalog-history', sim: { seed: 11 } });
  s = quoteIdent(p.config.databaseSchema);
});
afterAll(async () => {
  await p?.stop();
});

const rows = async (sql: string, params: unknown[] = []) => (await p.pool.query(sql, params)).rows;
const count = async (sql: string, params: unknown[] = []) => Number((await rows(sql, params))[0]?.n ?? 0);

describe('the catalog', () => {
  it('backfill loads every plan, plan variant, plan group and component as version 1', async () => {
    const existing = CATALOG.flatMap((type) => p.sim.ids(type).map((id) => ({ type, id })));
    expect(existing.length).toBeGreaterThanOrEqual(7);
    const result = await runBackfill({ kafka: p.kafka, api: p.api, log: silentLogger }, { topicPrefix: p.config.topicPrefix, types: [...CATALOG] });
    expect(result.incomplete).toEqual([]);
    expect(Object.values(result.objects).reduce((a, b) => a + b, 0)).toBe(existing.length);
    const tables = { Plan: 'plan', PlanVariant: 'plan_variant', PlanGroup: 'plan_group', Component: 'component' } as const;
    for (const type of CATALOG) {
      await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM ${s}.${tables[type]}_current`)) === p.sim.ids(type).length, { timeoutMs: 60_000, what: `${type} loaded` });
    }
    const variant = PLANS[0]!;
    expect(await rows(`SELECT version, plan_id, recurring_fee, setup_fee, source_event_id FROM ${s}.plan_variant_current WHERE resource_id = $1`, [variant.PlanVariantId])).toEqual([
      { version: 1, plan_id: variant.PlanId, recurring_fee: String(variant.Price), setup_fee: '0', source_event_id: null },
    ]);
    expect(await rows(`SELECT body->'Name'->>'_c' AS name FROM ${s}.plan_current WHERE resource_id = $1`, [variant.PlanId])).toEqual([{ name: variant.Name }]);
  }, 120_000);

  it('PlanChanged and PlanVariantChanged add versions: a renamed plan, a new price', async () => {
    const plan = PLANS[0]!;
    p.sim.catalog.renamePlan(0, 'Starter Plus');
    p.sim.catalog.setRecurringFee(0, 12.5);
    await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM ${s}.plan_variant_history WHERE resource_id = $1`, [plan.PlanVariantId])) === 2, { timeoutMs: 60_000, what: 'variant v2' });
    await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM ${s}.plan_history WHERE resource_id = $1`, [plan.PlanId])) === 2, { timeoutMs: 60_000, what: 'plan v2' });
    expect(await rows(`SELECT version, recurring_fee, source_event FROM ${s}.plan_variant_history WHERE resource_id = $1 ORDER BY version`, [plan.PlanVariantId])).toEqual([
      { version: 1, recurring_fee: String(plan.Price), source_event: null },
      { version: 2, recurring_fee: '12.5', source_event: 'PlanVariantChanged' },
    ]);
    expect(await rows(`SELECT version, body->'Name'->>'_c' AS name, source_event FROM ${s}.plan_history WHERE resource_id = $1 ORDER BY version`, [plan.PlanId])).toEqual([
      { version: 1, name: plan.Name, source_event: null },
      { version: 2, name: 'Starter Plus', source_event: 'PlanChanged' },
    ]);
  }, 120_000);

  it('Created events bring new catalog objects; Deleted events end them with a deleted version', async () => {
    const beta = p.sim.catalog.launchBeta('Beta', 49);
    await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM ${s}.resource_latest WHERE resource_id = ANY($1)`, [[beta.planId, beta.planVariantId, beta.componentId]])) === 3, { timeoutMs: 60_000, what: 'beta loaded' });
    expect(await rows(`SELECT resource_id, recurring_fee, source_event FROM ${s}.plan_variant_current WHERE resource_id = $1`, [beta.planVariantId])).toEqual([{ resource_id: beta.planVariantId, recurring_fee: '49', source_event: 'PlanVariantCreated' }]);
    p.sim.catalog.retire(beta);
    await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM ${s}.resource_latest WHERE deleted AND resource_id = ANY($1)`, [[beta.planId, beta.planVariantId, beta.componentId]])) === 3, { timeoutMs: 60_000, what: 'beta deleted' });
    expect(await rows(`SELECT version, deleted, source_event FROM ${s}.component_history WHERE resource_id = $1 ORDER BY version`, [beta.componentId])).toEqual([
      { version: 1, deleted: false, source_event: 'ComponentCreated' },
      { version: 2, deleted: true, source_event: 'ComponentDeleted' },
    ]);
  }, 120_000);
});
