import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/environment.js';
import { groupLag, topicRecordCount } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, type SinkHarness } from '../integration/sink-harness.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * The sink's broker stopped and started again while it loads batches that carry dead letters
 * (a record breaking the contract in each chunk). The sink sends those to the DLQ with its own
 * idempotent producer before it commits the batch; a send that fails across the restart must not
 * leave that producer refusing every later batch. The broker is this test's own.
 */
let kafka: PrivateService | undefined;
let h: SinkHarness | undefined;
beforeAll(async () => {
  if (!nativeKafka) return;
  kafka = await startPrivateKafka();
  h = await createSinkHarness(testConfig({ KAFKA_BROKERS: kafka.address }));
}, 120_000);
afterAll(async () => {
  try {
    await h?.close();
  } finally {
    await kafka?.dispose();
  }
});

describe.skipIf(!nativeKafka)('fault: the sink through a broker restart, with dead letters', () => {
  it('writes every acknowledged version and dead-letters every poison record after the restart', async () => {
    const t = h as SinkHarness;
    const broker = (kafka as PrivateService).service;
    const schemaId = await t.registry.registerFile(`${t.names.snapshots}-value`, 'resource-snapshot.avsc');
    const sink = await t.startSink({ maxBytesPerPartition: 64 * 1024 });
    const acked = new Set<string>();
    let poisonsAcked = 0;
    // A producer of the test's own per phase: a producer that lived through the restart could itself be refused.
    const produceChunk = async (producer: Producer, c: number) => {
      const good = Array.from({ length: 40 }, (_, i) => snapshot('Invoice', `c${c}-${i}`, 1, { chunk: c, i }));
      // Decode, but break the record contract: dead letters, a different number per chunk, so that
      // sends of different batches differ in size (what an idempotent producer's sequence numbers count).
      const poisons = Array.from({ length: (c % 3) + 1 }, (_, i) => snapshot('Invoice', `c${c}-poison-${i}`, 1, { chunk: c }, { source_event_ids: ['not-a-uuid'], source_events: ['InvoiceCreated'] }));
      const messages = await Promise.all([...good, ...poisons].map(async (r) => ({ key: `${r.resource_type}:${r.resource_id}`, value: await t.registry.encode(schemaId, r) })));
      await producer.send({ topic: t.names.snapshots, acks: -1, messages });
      for (const r of good) acked.add(r.resource_id);
      poisonsAcked += poisons.length;
    };
    const withProducer = async (fn: (p: Producer) => Promise<void>) => {
      const producer = t.kafka.producer({ retry: { retries: 2 } });
      await producer.connect();
      try {
        await fn(producer);
      } finally {
        await producer.disconnect().catch(() => undefined);
      }
    };
    const rows = () => t.count(`SELECT count(*) n FROM ${t.table('resource_versions')}`);

    let c = 0;
    await withProducer(async (p) => {
      for (; c < 60; c++) await produceChunk(p, c);
    });
    // Kill the broker while the sink is still loading those chunks (and sending their dead
    // letters): a produce request it wrote may never be answered.
    await waitFor(async () => (await rows()) > 0, { what: 'loading started' });
    try {
      process.kill(broker.runningPid() as number, 'SIGKILL');
      await waitFor(() => broker.runningPid() === undefined, { what: 'the broker gone' });
    } finally {
      await broker.start();
      await broker.waitReady(90_000);
    }
    await withProducer(async (p) => {
      for (const end = c + 10; c < end; c++) await produceChunk(p, c);
    });

    await waitFor(
      async () => {
        const { rows: stored } = await t.pool.query<{ resource_id: string }>(`SELECT resource_id FROM ${t.table('resource_versions')}`);
        const ids = new Set(stored.map((r) => r.resource_id));
        return [...acked].every((id) => ids.has(id));
      },
      { what: 'every acknowledged version written after the restart', timeoutMs: 120_000 },
    );
    // At least once: every poison record is in the DLQ, a repeat is allowed.
    await waitFor(async () => (await topicRecordCount(t.kafka, t.names.snapshotsDlq)) >= poisonsAcked, { what: 'every dead letter sent', timeoutMs: 60_000 });
    // Every batch, dead letters included, got through and was committed.
    await waitFor(async () => (await groupLag(t.kafka, `${t.config.topicPrefix}.sink`, t.names.snapshots)) === 0, { what: 'every batch committed', timeoutMs: 30_000 });
    expect(await topicRecordCount(t.kafka, t.names.snapshotsDlq)).toBeGreaterThanOrEqual(poisonsAcked);
    await sink.stop();
  }, 300_000);
});
