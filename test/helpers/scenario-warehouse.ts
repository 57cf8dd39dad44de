import { inject } from 'vitest';
import pg from 'pg';
import { quoteIdent } from '../../src/db/pool.js';
import { enricherGroupId } from '../../src/enricher/enricher.js';
import { sinkGroupId } from '../../src/sink/sink.js';
import { topicNames } from '../../src/wire/topics.js';
import { groupLag } from './pipeline-drain.js';
import { startSimulatedPipeline } from './simulated-pipeline.js';
import { waitFor } from './wait-for.js';
import { compareWarehouseToTruth, compareWebhooksToDeliveries, saveScenarioTruth } from './warehouse-truth.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The warehouse schema the sandbox scenario fills once per test run (see scenarioWarehouse). */
    scenarioSchema: string;
  }
}

/** The scenario every analyst-facing test reads: the simulator's default story, fixed seed. */
export const SCENARIO = { seed: 20251123, customers: 80 } as const;

export interface ScenarioWarehouse {
  /** The warehouse schema holding the scenario's history (read it, never write to it). */
  schema: string;
  /** The owner's connection string of the test PostgreSQL. */
  databaseUrl: string;
}

/**
 * A warehouse filled by the sandbox scenario through the real pipeline (ingress, enricher, sink on
 * the test Kafka, registry and PostgreSQL), shared by every test file of the run that asks for it:
 * the first caller fills it under an advisory lock, the others wait on the lock and then read the
 * same schema. The metric views, the dashboard, the dbt package and the analysts' example
 * queries are all checked against it, so it is filled once, not once per file. Read-only for
 * its users: a test that needs to change history makes its own.
 */
export async function scenarioWarehouse(): Promise<ScenarioWarehouse> {
  const schema = inject('scenarioSchema');
  const databaseUrl = inject('services').DATABASE_URL;
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'scenario-warehouse' });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [schema]);
    const { rows } = await client.query<{ filled: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS filled`, [`${quoteIdent(schema)}.scenario_filled`]);
    if (!rows[0]?.filled) {
      await fill(schema);
      await client.query(`CREATE TABLE ${quoteIdent(schema)}.scenario_filled (at timestamptz NOT NULL DEFAULT now())`);
    }
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [schema]);
  } finally {
    await client.end();
  }
  return { schema, databaseUrl };
}

async function fill(schema: string): Promise<void> {
  const run = await startSimulatedPipeline({
    name: 'scenario-warehouse',
    sim: { seed: SCENARIO.seed },
    env: { DATABASE_SCHEMA: schema },
  });
  try {
    const result = await run.sim.runScenario({ name: 'default', customers: SCENARIO.customers });
    if (!result.completed) throw new Error('the sandbox scenario did not complete');
    // Not drainPipeline: its flush sentinels are contracts of their own, and would be counted by
    // every metric. Drained here means: every delivery made, every webhook routed and stored, and
    // the warehouse equal to the simulator's true history.
    const { kafka, config, pool, sim } = run;
    const webhooks = topicNames(config.topicPrefix).webhooks;
    await waitFor(() => sim.stats().webhooks.pending === 0, { timeoutMs: 120_000, what: 'simulator deliveries done' });
    await waitFor(async () => (await groupLag(kafka, enricherGroupId(config.topicPrefix), webhooks)) === 0, { timeoutMs: 120_000, intervalMs: 200, what: 'every webhook routed' });
    await waitFor(async () => (await groupLag(kafka, sinkGroupId(config), webhooks)) === 0, { timeoutMs: 120_000, intervalMs: 200, what: 'every webhook stored' });
    await waitFor(async () => (await compareWebhooksToDeliveries(pool, schema, sim)).problems.length === 0 && (await compareWarehouseToTruth(pool, schema, sim)).problems.length === 0, {
      timeoutMs: 120_000,
      intervalMs: 500,
      what: 'the warehouse equal to the scenario\'s true history',
    });
    await saveScenarioTruth(pool, schema, sim);
  } finally {
    await run.stop();
  }
}
