import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteIdent } from '../../src/db/pool.js';
import { METRIC_VIEWS } from '../../src/warehouse/metric-views.js';
import { ANALYST_ROLE } from '../../src/warehouse/resource-types.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, webhook, type SinkHarness } from './sink-harness.js';

/** `billing-loader replay --rebuild`: a fresh schema from the log, verified, swapped in atomically. */
let h: SinkHarness;
let env: Record<string, string>;
const replaced: string[] = [];
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
  env = {
    KAFKA_BROKERS: h.config.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: h.config.schemaRegistryUrl,
    DATABASE_URL: h.config.databaseUrl,
    DATABASE_SCHEMA: h.config.databaseSchema,
    TOPIC_PREFIX: h.config.topicPrefix,
    LOG_LEVEL: 'warn',
  };
});
afterAll(async () => {
  for (const s of replaced) await h.pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(s)} CASCADE`);
  await h?.close();
});

describe('replay --rebuild', () => {
  it('refuses while the sink runs; once stopped, rebuilds an identical warehouse and swaps it in', async () => {
    const hooks = Array.from({ length: 10 }, (_, i) => webhook('OrderSucceeded', { OrderId: `x-${i}` }));
    // Bodies with typed fields in changing letter case and a value of the wrong type, some versions caused by a webhook.
    const body = (i: number) => ({ i, [i % 3 ? 'Status' : 'STATUS']: i < 40 ? 'Open' : 'Completed', TotalNet: i % 7 === 0 ? 'n/a' : i });
    const records = Array.from({ length: 120 }, (_, i) =>
      snapshot(i % 2 ? 'Order' : 'Invoice', `x-${i % 40}`, Math.floor(i / 40) + 1, body(i), i < 10 ? { source_event_ids: [hooks[i]!.event_id], source_events: ['OrderSucceeded'] } : {}),
    );
    await h.produceSnapshots(records);
    await h.produceWebhooks(hooks);
    const sink = await h.startSink();
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 120 && (await h.count(`SELECT count(*) n FROM ${h.table('webhook_events')}`)) === 10, { what: 'loaded' });

    const refused = await runCli(['replay', '--rebuild'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/active member\(s\).*stop the sink first/);
    await sink.stop();
    // A recorded dead letter: no log a rebuild reads holds it, so it moves over at the swap.
    await h.pool.query(`INSERT INTO ${h.table('dead_letters')} (dlq_topic, dlq_partition, dlq_offset, stage, error_class, error_message, source_topic, source_partition, source_offset, failed_at) VALUES ('d', 0, 0, 'sink', 'decode', 'x', 's', 0, 0, now())`);
    // The analyst's exchange rates (the MRR views' fx_rates) are in no log either: they move over too.
    await h.pool.query(`INSERT INTO ${h.table('fx_rates')} (currency, valid_from, rate_to_reporting) VALUES ('CHF', '2025-01-01', 1.04)`);

    const oldOid = (await h.pool.query(`SELECT oid FROM pg_namespace WHERE nspname = $1`, [h.schema])).rows[0].oid;
    const result = await runCli(['replay', '--rebuild'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/rebuild: reading 130 records/);
    expect(result.stderr).toMatch(/rebuild: verified 120 versions and 10 webhooks; 0 versions out of sequence/);
    const m = /previous warehouse kept as (\S+)/.exec(result.stdout);
    expect(m, result.stdout).not.toBeNull();
    const old = m![1]!;
    replaced.push(old);

    // The name now points at a new schema; the old one is kept under the printed name.
    const newOid = (await h.pool.query(`SELECT oid FROM pg_namespace WHERE nspname = $1`, [h.schema])).rows[0].oid;
    expect(newOid).not.toBe(oldOid);
    expect((await h.pool.query(`SELECT oid FROM pg_namespace WHERE nspname = $1`, [old])).rows[0].oid).toBe(oldOid);
    const a = quoteIdent(h.schema);
    const b = quoteIdent(old);
    expect(await h.count(`SELECT count(*) n FROM ${a}.dead_letters`)).toBe(1);
    expect(await h.count(`SELECT count(*) n FROM ${a}.fx_rates`)).toBe(1);
    for (const table of ['resource_versions', 'webhook_events', 'order_history', 'invoice_current', 'dead_letters', 'fx_rates']) {
      const diff = await h.rowDifference(a, b, table);
      expect(diff, table).toBe(0);
    }
    // Every view and function of the analyst layer answers the same (typed columns, changes, as_of, heads).
    expect(await h.analystDifferences(a, b)).toEqual([]);
    // The metric views are recreated with them (migrate on the fresh schema), and compared above.
    const views = await h.pool.query<{ v: string }>(`SELECT table_name AS v FROM information_schema.views WHERE table_schema = $1`, [h.schema]);
    expect(views.rows.map((r) => r.v)).toEqual(expect.arrayContaining([...METRIC_VIEWS]));
    // The rebuilt warehouse carries its grants, triggers and migration record.
    const grants = await h.pool.query(`SELECT has_table_privilege($1, $2, 'SELECT') AS r`, [ANALYST_ROLE, `${a}.order_history`]);
    expect(grants.rows[0].r).toBe(true);
    await expect(h.pool.query(`DELETE FROM ${a}.resource_versions`)).rejects.toMatchObject({ code: '42501' });
    expect(await h.count(`SELECT count(*) n FROM ${a}.schema_migrations`)).toBeGreaterThanOrEqual(2);

    // The sink goes on writing into the rebuilt warehouse from its committed offsets.
    await h.produceSnapshots([snapshot('Order', 'x-1', 4, { after: 'rebuild' })]);
    const again = await h.startSink();
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${a}.resource_versions`)) === 121, { what: 'new version after the swap' });
    await again.stop();
  });
});
