import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createHealth, type Health } from '../../src/health.js';
import type { Running } from '../../src/lifecycle.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { WRITE_CONDITION } from '../../src/sink/batch-handler.js';
import { startSink } from '../../src/sink/sink.js';
import { testConfig } from '../helpers/environment.js';
import { groupLag, topicRecordCount } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';
import { startRecordingServer, type RecordingServer } from './billing-api-recording-server.js';
import { createSinkHarness, metricValue, snapshot, type SinkHarness } from './sink-harness.js';

/**
 * A registry that answers 404 for the schema id of a well-framed record is a configuration
 * problem (a wrong SCHEMA_REGISTRY_URL, a wiped registry), not a bad record: dead-lettering would
 * send every record to the DLQ and commit past it. The sink holds instead: not ready with the
 * reason, nothing committed, nothing dead-lettered, an error log; and it goes on by itself once
 * the registry knows the id again. Bytes that are not a framed record still go to the DLQ
 * (test/integration/sink-poison-record.test.ts).
 */
const harnesses: SinkHarness[] = [];
const sinks: Running[] = [];
let proxy: RecordingServer | undefined;
afterAll(async () => {
  await Promise.all(sinks.map((s) => s.stop()));
  await Promise.all(harnesses.map((h) => h.close()));
  await proxy?.close();
});

async function harness(config: Config): Promise<SinkHarness> {
  const h = await createSinkHarness(config);
  harnesses.push(h);
  return h;
}

/** A sink of the harness's configuration, with its readiness and its log lines at hand. */
async function sinkOf(h: SinkHarness) {
  const lines: Record<string, unknown>[] = [];
  const out = new PassThrough();
  out.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  const health: Health = createHealth();
  const metrics = createMetrics();
  const sink = await startSink({ log: createLogger('warn', out), metrics, health }, h.config);
  sinks.push(sink);
  const heldReason = async () => (await health.readiness()).checks[WRITE_CONDITION]?.reason;
  return { sink, health, metrics, lines, heldReason };
}

const dlqRecords = async (h: SinkHarness) => (await topicRecordCount(h.kafka, h.names.snapshotsDlq)) + (await topicRecordCount(h.kafka, h.names.webhooksDlq));
const sinkGroup = (h: SinkHarness) => `${h.config.topicPrefix}.sink`;

describe('sink: the registry does not know a schema id', () => {
  it('holds the records with the real registry answering 404: not ready, nothing committed, nothing dead-lettered', async () => {
    const h = await harness(testConfig());
    const unknownId = 0x7fffff00;
    const framed = Buffer.concat([Buffer.from([0]), Buffer.from([0x7f, 0xff, 0xff, 0x00]), Buffer.from('xx')]);
    // One key, so one partition and one batch: the good records around the unknown one are held with it.
    await h.produceSnapshots([snapshot('Invoice', 'held', 1, { ok: true })]);
    await h.produceRaw(h.names.snapshots, [{ key: 'Invoice:held', value: framed }]);
    await h.produceSnapshots([snapshot('Invoice', 'held', 2, { ok: false })]);

    const s = await sinkOf(h);
    const reason = await waitFor(() => s.heldReason(), { what: 'the sink not ready over the unknown schema id', timeoutMs: 60_000 });
    expect(reason).toMatch(new RegExp(`schema id ${unknownId}`));
    expect(reason).toMatch(/SCHEMA_REGISTRY_URL/);
    expect((await s.health.readiness()).ready).toBe(false);
    // Still held after a few more retries.
    await waitFor(() => s.lines.filter((l) => l.msg === 'schema registry does not know the schema id of a record, holding the batch').length >= 2, { what: 'a repeated error log', timeoutMs: 30_000 });
    expect(s.lines.find((l) => l.msg === 'schema registry does not know the schema id of a record, holding the batch')).toMatchObject({ level: 'error', schemaId: unknownId, topic: h.names.snapshots });
    expect(await metricValue(s.metrics, 'billing_loader_sink_dead_letters_total')).toBe(0);
    expect(await dlqRecords(h)).toBe(0);
    expect(await groupLag(h.kafka, sinkGroup(h), h.names.snapshots)).toBe(3);
    expect(await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)).toBe(0);
  }, 120_000);

  it('goes on by itself once the registry knows the id again (a registry wiped, then restored)', async () => {
    let wiped = true;
    const upstream = testConfig().schemaRegistryUrl;
    // The real registry behind a door that, while "wiped", answers schema-id lookups as a wiped registry does.
    proxy = await startRecordingServer(async (req, res) => {
      if (wiped && req.method === 'GET' && /^\/schemas\/ids\/\d+/.test(req.url)) {
        res.writeHead(404, { 'content-type': 'application/vnd.schemaregistry.v1+json' }).end(JSON.stringify({ error_code: 40403, message: 'Schema not found' }));
        return;
      }
      const answer = await fetch(`${upstream}${req.url}`, { method: req.method, headers: { 'content-type': req.headers['content-type'] ?? 'application/json' }, body: req.method === 'GET' ? undefined : req.body });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text());
    });
    const h = await harness(testConfig({ SCHEMA_REGISTRY_URL: proxy.url }));
    await h.produceSnapshots([snapshot('Contract', 'restored', 1, { a: 1 }), snapshot('Contract', 'restored', 2, { a: 2 })]);

    const s = await sinkOf(h);
    await waitFor(() => s.heldReason(), { what: 'the sink not ready over the unknown schema id', timeoutMs: 60_000 });
    expect(await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)).toBe(0);
    expect(await groupLag(h.kafka, sinkGroup(h), h.names.snapshots)).toBe(2);

    wiped = false;
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 2, { what: 'both versions written once the registry is back', timeoutMs: 60_000 });
    await waitFor(async () => (await groupLag(h.kafka, sinkGroup(h), h.names.snapshots)) === 0, { what: 'the offsets committed', timeoutMs: 30_000 });
    expect(await s.heldReason()).toBeUndefined();
    expect(await dlqRecords(h)).toBe(0);
  }, 120_000);
});
