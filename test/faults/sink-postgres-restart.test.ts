import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresService } from '../../src/stack/postgres-service.js';
import { defaultStackDir, readStackPorts } from '../../src/stack/settings.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, metricValue, snapshot, webhook, type SinkHarness } from '../integration/sink-harness.js';

/**
 * PostgreSQL stopped and started again while the sink is loading: nothing is lost, nothing
 * duplicated, nothing sent to the DLQ (docs/CONTRACT.md properties 6 and 7). Controls the local stack's
 * PostgreSQL, so it runs only against the native stack (not against DATABASE_URL of a server
 * the test does not own), and always starts it again.
 */
const stackDir = process.env.STACK_DIR || defaultStackDir;
const postgres = postgresService(stackDir, readStackPorts(stackDir).postgres);
const ownsPostgres = postgres.runningPid() !== undefined;

let h: SinkHarness;
beforeAll(async () => {
  if (ownsPostgres) h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  await h?.close();
});

describe.skipIf(!ownsPostgres)('sink: PostgreSQL restarted under load', () => {
  it('loses nothing, duplicates nothing, and sends nothing to the DLQ', async () => {
    const sink = await h.startSink();
    const perChunk = 300;
    const chunks = 12;
    let produced = 0;
    const produceChunk = async (c: number) => {
      await h.produceSnapshots(Array.from({ length: perChunk }, (_, i) => snapshot('Invoice', `inv-${i}`, c + 1, { Id: `inv-${i}`, chunk: c, pad: 'p'.repeat(800) })));
      await h.produceWebhooks([webhook('InvoiceCreated', { InvoiceId: `chunk-${c}` })]);
      produced++;
    };
    const rows = () => h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`);

    for (let c = 0; c < 4; c++) await produceChunk(c);
    await waitFor(async () => (await rows()) > 0, { what: 'loading started' });
    try {
      await postgres.stop();
      // Keep producing while the database is down: the sink must wait, not drop or DLQ.
      for (let c = 4; c < 8; c++) await produceChunk(c);
      await waitFor(async () => (await metricValue(sink.metrics, 'billing_loader_sink_database_retries_total')) > 0, { what: 'sink saw the outage', timeoutMs: 30_000 });
    } finally {
      await postgres.start();
      await postgres.waitReady(60_000);
    }
    for (let c = 8; c < chunks; c++) await produceChunk(c);

    await waitFor(async () => (await rows()) === perChunk * produced, { what: 'every version after the restart', timeoutMs: 90_000 });
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('webhook_events')}`)) === produced, { what: 'every webhook' });
    const { rows: check } = await h.pool.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE version <> rn)::int AS out_of_sequence
         FROM (SELECT version, row_number() OVER (PARTITION BY resource_id ORDER BY version) rn FROM ${h.table('resource_versions')}) v`,
    );
    expect(check[0]).toEqual({ n: perChunk * chunks, out_of_sequence: 0 });
    expect(await metricValue(sink.metrics, 'billing_loader_sink_dead_letters_total')).toBe(0);
    await sink.stop();
  });
});
