import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { migrate } from '../../src/db/migrate.js';
import { quoteIdent } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import { createMetrics } from '../../src/metrics.js';
import { startSink } from '../../src/sink/sink.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, webhook, type SinkHarness } from './sink-harness.js';

/**
 * docs/CONTRACT.md property 5: the snapshot log is the source of truth. Replaying the whole log (and
 * the webhooks) into an empty schema reproduces the tables row for row, compared by a query.
 */
let h: SinkHarness;
const emptySchema = `test_${uniqueSuffix()}`;
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  await h?.pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(emptySchema)} CASCADE`);
  await h?.close();
});

describe('replay: the whole log into an empty schema', () => {
  it('reproduces resource_versions and webhook_events row for row', async () => {
    const records = [];
    for (let i = 0; i < 50; i++) {
      const e = randomUUID();
      records.push(snapshot('Contract', `c-${i}`, 1, { Id: `c-${i}`, CustomerId: `cu-${i % 7}` }, { source_event_ids: [e], source_events: ['ContractCreated'] }));
      records.push(snapshot('Contract', `c-${i}`, 2, { Id: `c-${i}`, CustomerId: `cu-${i % 7}`, Plan: 'pro' }));
      if (i % 5 === 0) records.push(snapshot('Contract', `c-${i}`, 3, null));
      records.push(snapshot('PaymentTransaction', `p-${i}`, 1, { Id: `p-${i}`, Amount: i * 1.5 }));
    }
    records.push(snapshot('PaymentTransaction', 'p-1', 1, { Id: 'p-1', Amount: 1.5 })); // a duplicate in the log
    records.push(snapshot('PaymentTransaction', 'p-2', 3, { Id: 'p-2', Amount: 99 })); // a gap, written anyway
    await h.produceSnapshots(records);
    const hooks = Array.from({ length: 40 }, (_, i) => webhook('ContractChanged', { ContractId: `c-${i}` }));
    await h.produceWebhooks([...hooks, hooks[0]!]); // a redelivered webhook record

    const expectedVersions = records.length - 1;
    const original = await h.startSink();
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === expectedVersions && (await h.count(`SELECT count(*) n FROM ${h.table('webhook_events')}`)) === 40, {
      what: 'original load',
    });
    await original.stop();

    // A second sink, its own group, from offset 0, into an empty schema.
    await migrate(h.pool, { schema: emptySchema, log: h.log });
    const replayConfig = loadConfig({ ...inject('services'), TOPIC_PREFIX: h.config.topicPrefix, DATABASE_SCHEMA: emptySchema, SINK_GROUP_ID: `${h.config.topicPrefix}.replay`, LOG_LEVEL: 'warn' });
    const replay = await startSink({ log: h.log, metrics: createMetrics(), health: createHealth() }, replayConfig);
    const b = quoteIdent(emptySchema);
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${b}.resource_versions`)) === expectedVersions && (await h.count(`SELECT count(*) n FROM ${b}.webhook_events`)) === 40, {
      what: 'replayed load',
    });
    await replay.stop();

    const a = quoteIdent(h.schema);
    for (const table of ['resource_versions', 'webhook_events']) {
      const diff = await h.rowDifference(a, b, table);
      expect(diff, table).toBe(0);
    }
    // And the public views agree too.
    for (const view of ['contract_history', 'contract_current', 'payment_transaction_history']) {
      const diff = await h.rowDifference(a, b, view);
      expect(diff, view).toBe(0);
    }
    // Every view and function of the analyst layer answers the same (typed columns, changes, as_of, heads).
    expect(await h.analystDifferences(a, b)).toEqual([]);
    expect(await h.count(`SELECT count(*) n FROM ${b}.contract_current`)).toBe(40);
  });
});
