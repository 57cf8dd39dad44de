import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeadLetterWriter } from '../../src/kafka/dead-letters.js';
import { readMessageLimits } from '../../src/kafka/message-limits.js';
import { deadLetterFor } from '../../src/wire/dead-letter.js';
import { DEAD_LETTER_SCHEMA_FILE, valueSubject } from '../../src/wire/schemas.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { testConfig } from '../helpers/environment.js';
import { readAllDeadLetters } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, metricValue, snapshot, type SinkHarness } from './sink-harness.js';

/**
 * Dead letters are counted where an operator and an analyst look: billing_loader_dead_letters_total
 * by stage and error class, and the warehouse's pipeline_health.dead_letters, which counts every
 * record of both DLQs (the sink's own letters, the enricher's, and letters of the earlier format).
 */
let h: SinkHarness;
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  await h?.close();
});

type Counts = Record<string, number>;
const tally = (rows: { stage: string; errorClass: string; n?: number }[]): Counts => {
  const out: Counts = {};
  for (const r of rows) out[`${r.stage} ${r.errorClass}`] = (out[`${r.stage} ${r.errorClass}`] ?? 0) + (r.n ?? 1);
  return out;
};

describe('dead letters counted', () => {
  it('in the metric by stage and error class, and in pipeline_health equal to the letters in the DLQs', async () => {
    // The sink's own letters: an undecodable snapshot, a version conflict, an undecodable webhook.
    await h.produceSnapshots([snapshot('Order', 'o1', 1, { a: 1 })]);
    await h.produceSnapshots([snapshot('Order', 'o1', 1, { a: 2 })]);
    await h.produceRaw(h.names.snapshots, [{ key: 'Order:garbage', value: Buffer.from('not Avro') }]);
    await h.produceRaw(h.names.webhooks, [{ key: 'w', value: Buffer.from('not Avro either') }]);
    // Letters the enricher writes, and one of the earlier Avro-envelope format.
    const limitOf = await readMessageLimits(h.kafka, [h.names.webhooksDlq]);
    const producer = h.kafka.producer();
    await producer.connect();
    const requests = enricherTopics(h.config.topicPrefix).requests;
    await createDeadLetterWriter(producer, 'enricher', limitOf).send([
      deadLetterFor(h.names.webhooksDlq, requests, 0, { offset: '1', key: Buffer.from('Contract:x'), value: Buffer.from('{}') }, 'not-found', 'HTTP 404'),
      deadLetterFor(h.names.webhooksDlq, requests, 0, { offset: '2', key: Buffer.from('Contract:y'), value: Buffer.from('{}') }, 'not-found', 'HTTP 404'),
    ]);
    const envelope = await h.registry.encode(await h.registry.registerFile(valueSubject(h.names.webhooksDlq), DEAD_LETTER_SCHEMA_FILE), {
      source_topic: h.names.webhooks, source_partition: 0, source_offset: 0, source_key: null, source_value: Buffer.from('x'),
      stage: 'enricher', error_class: 'decode', error_message: 'old', failed_at: Date.now(),
    });
    await producer.send({ topic: h.names.webhooksDlq, acks: -1, messages: [{ key: null, value: envelope }] });
    await producer.disconnect();

    const sink = await h.startSink();
    const letters = async () => [...(await readAllDeadLetters(h.kafka, h.registry, h.names.snapshotsDlq)), ...(await readAllDeadLetters(h.kafka, h.registry, h.names.webhooksDlq))];
    await waitFor(async () => (await letters()).length === 6, { what: 'six letters in the DLQs' });
    const inDlq = await letters();
    const healthTotal = async () => h.count(`SELECT COALESCE(sum(dead_letters), 0) n FROM ${h.table('pipeline_health')}`);
    await waitFor(async () => (await healthTotal()) === inDlq.length, { what: 'pipeline_health counting every letter' });

    const { rows } = await h.pool.query<{ stage: string; error_class: string; n: string }>(`SELECT stage, error_class, count(*) n FROM ${h.table('dead_letters')} GROUP BY 1, 2`);
    expect(tally(rows.map((r) => ({ stage: r.stage, errorClass: r.error_class, n: Number(r.n) })))).toEqual(tally(inDlq));
    expect(tally(inDlq)).toEqual({ 'sink decode': 2, 'sink version-conflict': 1, 'enricher not-found': 2, 'enricher decode': 1 });

    // The metric counts the letters this process wrote, by stage and error class.
    expect(await metricValue(sink.metrics, 'billing_loader_dead_letters_total', { stage: 'sink', error_class: 'decode' })).toBe(2);
    expect(await metricValue(sink.metrics, 'billing_loader_dead_letters_total', { stage: 'sink', error_class: 'version-conflict' })).toBe(1);

    // Read again from the start (a new process, its group's offsets gone): nothing counted twice.
    await sink.stop();
    const admin = h.kafka.admin();
    await admin.connect();
    await admin.deleteGroups([`${h.config.topicPrefix}.sink.dead-letters`]);
    await admin.disconnect();
    const again = await h.startSink();
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('dead_letters')} WHERE loaded_at > now() - interval '1 hour'`)) === 6, { what: 'letters read again' });
    // A sentinel letter proves the second sink read past the six before the total is compared.
    const producer2 = h.kafka.producer();
    await producer2.connect();
    await createDeadLetterWriter(producer2, 'enricher', limitOf).send([deadLetterFor(h.names.webhooksDlq, requests, 0, { offset: '3', key: null, value: null }, 'rejected-by-api', 'HTTP 400')]);
    await producer2.disconnect();
    await waitFor(async () => (await healthTotal()) === 7, { what: 'the sentinel counted' });
    expect(await h.count(`SELECT count(*) n FROM ${h.table('dead_letters')}`)).toBe(7);
    await again.stop();
  }, 90_000);
});
