import type { Consumer } from 'kafkajs';
import type { Registry as MetricsRegistry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHealth } from '../../src/health.js';
import { createMetrics } from '../../src/metrics.js';
import { startOpsServer, type RunningOpsServer } from '../../src/ops-server.js';
import { migrate } from '../../src/db/migrate.js';
import { quoteIdent } from '../../src/db/pool.js';
import { startPipeline, type RunningPipeline } from '../../src/pipeline.js';
import { createRegistry } from '../../src/registry/registry.js';
import { startSink } from '../../src/sink/sink.js';
import { startStageWatch, type StageWatch } from '../../src/watch/stall-watchdog.js';
import { createWatchMetrics } from '../../src/watch/watch-metrics.js';
import { topicNames } from '../../src/wire/topics.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, webhook, type SinkHarness } from './sink-harness.js';

/**
 * The stage watch against the real broker and database: lag gauges for every consumer group the
 * loader runs, kept without batches and removed on revocation; a stage whose handler blocks (the
 * sink waiting on a table lock) shows a growing stall, is restarted by the watchdog, and fails
 * liveness when the restart does not help; progress makes it live again.
 */
let h: SinkHarness;
const cleanups: (() => Promise<void>)[] = [];
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await h?.close();
});

type Sample = { labels: Record<string, string | number>; value: number };
async function samples(metrics: MetricsRegistry, name: string): Promise<Sample[]> {
  const metric = metrics.getSingleMetric(name);
  return metric ? ((await metric.get()).values as Sample[]) : [];
}

/** Partitions of `group` that have a lag gauge. */
async function gaugedPartitions(metrics: MetricsRegistry, group: string): Promise<number[]> {
  return (await samples(metrics, 'billing_loader_consumer_group_lag')).filter((s) => s.labels.group === group).map((s) => Number(s.labels.partition)).sort((a, b) => a - b);
}

function watchFor(metrics: MetricsRegistry, health: ReturnType<typeof createHealth>, settings: { stallMs: number; livenessMs: number }): StageWatch {
  const watch = startStageWatch({ log: h.log, health, metrics: createWatchMetrics(metrics), settings: { checkIntervalMs: 200, ...settings } });
  cleanups.push(() => Promise.resolve(watch.stop()));
  return watch;
}

describe('stage watch', () => {
  it('keeps a lag gauge for every partition of every consumer group it owns, without a batch, and removes it on revocation', async () => {
    const metrics = createMetrics();
    const health = createHealth();
    const watch = watchFor(metrics, health, { stallMs: 0, livenessMs: 1 });
    // Topics of its own: the harness registered a smaller webhook schema than the ingress's.
    const config = { ...testConfig(), ingressPort: 0 };
    await migrate(h.pool, { schema: config.databaseSchema, log: h.log });
    const registry = createRegistry(config);
    const pipeline: RunningPipeline = await startPipeline({ kafka: h.kafka, registry, reader: { getResource: (_type, id) => Promise.resolve({ kind: 'found', body: JSON.stringify({ Id: id }) }) }, log: h.log, metrics, health, watch }, config, { host: '127.0.0.1' });
    let stopped = false;
    cleanups.push(() => (stopped ? Promise.resolve() : pipeline.stop()));
    const prefix = config.topicPrefix;
    const all = Array.from({ length: config.topicPartitions }, (_, i) => i);
    const groups = [`${prefix}.enricher`, `${prefix}.enricher.fetcher`, `${prefix}.enricher.delayed`, `${prefix}.sink`];
    // Nothing was ever written: no batch arrived, and each group still shows its partitions, at 0.
    for (const group of groups) {
      await waitFor(async () => (await gaugedPartitions(metrics, group)).length === all.length * (group.endsWith('.sink') ? 2 : 1), { what: `lag gauges of ${group}`, timeoutMs: 60_000 });
    }
    const routerLag = (await samples(metrics, 'billing_loader_consumer_group_lag')).filter((s) => s.labels.group === `${prefix}.enricher`);
    expect(routerLag.map((s) => [s.labels.stage, s.labels.topic, s.value])).toEqual(all.map(() => ['router', topicNames(prefix).webhooks, 0]));

    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${pipeline.ingress.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ Event: 'CustomerChanged', CustomerId: `c-${i}` }) });
      expect(res.status).toBe(200);
    }
    const webhooks = `${quoteIdent(config.databaseSchema)}.webhook_events`;
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${webhooks}`)) === 20, { what: 'the sink wrote the webhooks', timeoutMs: 60_000 });
    // Caught up: the gauges say so at the next check, with no batch needed to say it.
    await waitFor(async () => (await samples(metrics, 'billing_loader_consumer_group_lag')).filter((s) => groups.includes(String(s.labels.group))).every((s) => s.value === 0), { what: 'every group caught up', timeoutMs: 60_000 });

    // A second member takes some of the router's partitions: their gauges go from this process.
    const intruder: Consumer = h.kafka.consumer({ groupId: `${prefix}.enricher`, sessionTimeout: 30_000, heartbeatInterval: 3000 });
    let taken: number[] = [];
    intruder.on(intruder.events.GROUP_JOIN, ({ payload }) => void (taken = [...(payload.memberAssignment[topicNames(prefix).webhooks] ?? [])]));
    await intruder.connect();
    await intruder.subscribe({ topic: topicNames(prefix).webhooks, fromBeginning: true });
    await intruder.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: () => Promise.resolve() });
    cleanups.push(() => intruder.disconnect());
    await waitFor(() => taken.length > 0, { what: 'the second member got partitions', timeoutMs: 90_000 });
    await waitFor(async () => JSON.stringify(await gaugedPartitions(metrics, `${prefix}.enricher`)) === JSON.stringify(all.filter((p) => !taken.includes(p))), { what: "the router's gauges of revoked partitions removed", timeoutMs: 90_000 });
    expect(taken.length).toBeLessThan(all.length);

    // It leaves: the router owns every partition again, and its gauges come back.
    await intruder.disconnect();
    await waitFor(async () => (await gaugedPartitions(metrics, `${prefix}.enricher`)).length === all.length, { what: "the router's gauges back", timeoutMs: 90_000 });
    stopped = true;
    await pipeline.stop();
    // Stopped: its gauges are gone with it.
    for (const group of groups) expect(await gaugedPartitions(metrics, group)).toEqual([]);
  }, 300_000);

  it('shows a blocked stage as stalled, restarts it, fails liveness while the restart does not help, and is live again once it progresses', async () => {
    const metrics = createMetrics();
    const health = createHealth();
    const watch = watchFor(metrics, health, { stallMs: 2000, livenessMs: 2000 });
    const sink = await startSink({ log: h.log, metrics, health, watch }, { ...h.config, sinkGroupId: `${h.config.topicPrefix}.stall-sink` });
    cleanups.push(() => sink.stop());
    const ops: RunningOpsServer = await startOpsServer(0, { health, metrics }, '127.0.0.1');
    cleanups.push(() => ops.stop());
    const livez = async () => (await fetch(`http://127.0.0.1:${ops.port}/livez`)).status;
    const stalled = async () => (await samples(metrics, 'billing_loader_stage_stalled_seconds')).find((s) => s.labels.stage === 'sink')?.value ?? 0;
    const restarts = async () => (await samples(metrics, 'billing_loader_stage_restarts_total')).find((s) => s.labels.stage === 'sink')?.value ?? 0;
    await waitFor(async () => (await gaugedPartitions(metrics, `${h.config.topicPrefix}.stall-sink`)).length > 0, { what: 'the sink joined its group', timeoutMs: 60_000 });
    expect(await livez()).toBe(200);

    // The sink's writes wait on a lock this test holds: its batch handler blocks.
    const locker = await h.pool.connect();
    cleanups.push(() => Promise.resolve(locker.release()));
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${h.table('webhook_events')} IN ACCESS EXCLUSIVE MODE`);
    await h.produceWebhooks(Array.from({ length: 10 }, (_, i) => webhook('CustomerChanged', { CustomerId: `s-${i}` })));

    await waitFor(async () => (await stalled()) >= 1, { what: 'the stall gauge grows', timeoutMs: 60_000 });
    await waitFor(async () => (await restarts()) === 1, { what: 'the watchdog restarted the sink', timeoutMs: 60_000 });
    await waitFor(async () => (await livez()) === 503, { what: 'liveness fails', timeoutMs: 60_000 });
    const body = (await (await fetch(`http://127.0.0.1:${ops.port}/livez`)).json()) as { failing: Record<string, string> };
    expect(body.failing['stage.sink']).toMatch(/^stalled for \d+ s with \d+ records waiting; a restart of its consumers and producers did not help$/);
    expect(await restarts()).toBe(1);
    expect(await stalled()).toBeGreaterThanOrEqual(4);

    // The lock goes: the (restarted) sink writes, commits, and the process is live again.
    await locker.query('ROLLBACK');
    await waitFor(async () => (await livez()) === 200, { what: 'live again', timeoutMs: 120_000 });
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('webhook_events')} WHERE payload->>'CustomerId' LIKE 's-%'`)) === 10, { what: 'the webhooks written', timeoutMs: 60_000 });
    expect(await stalled()).toBe(0);
  }, 300_000);
});
