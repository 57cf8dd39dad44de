import type { Kafka, KafkaMessage, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeadLetterWriter } from '../../src/kafka/dead-letters.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { readToEnd } from '../../src/kafka/read-to-end.js';
import { readMessageLimits } from '../../src/kafka/message-limits.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { createRegistry } from '../../src/registry/registry.js';
import { deadLetterFor } from '../../src/wire/dead-letter.js';
import { DEAD_LETTER_SCHEMA_FILE, SNAPSHOT_SCHEMA_FILE, valueSubject } from '../../src/wire/schemas.js';
import { enricherTopicSpecs, enricherTopics, pipelineTopicSpecs, topicNames } from '../../src/wire/topics.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';

/**
 * `billing-loader dlq list|show|redrive` against the real broker and registry: letters of both
 * formats (one in the earlier Avro envelope), a webhooks DLQ of three partitions, every filter,
 * and a redrive that sends each letter back exactly once, however often and however concurrently
 * it runs.
 */
const config = testConfig();
const names = topicNames(config.topicPrefix);
const internal = enricherTopics(config.topicPrefix);
const env = { KAFKA_BROKERS: config.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: config.schemaRegistryUrl, TOPIC_PREFIX: config.topicPrefix, LOG_LEVEL: 'warn' };
const registry = createRegistry(config.schemaRegistryUrl);
let kafka: Kafka;
let producer: Producer;
let snapshotBytes: Buffer;

const dlq = (...args: string[]) => runCli(['dlq', ...args], env);
const readAll = async (topic: string) => {
  const out: KafkaMessage[] = [];
  await readToEnd(kafka, topic, (_p, m) => void out.push(m));
  return out;
};

beforeAll(async () => {
  kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'dlq-cli-test', log: silentLogger });
  const admin = kafka.admin();
  await admin.connect();
  const specs = pipelineTopicSpecs(names);
  // A DLQ of more partitions than the loader creates: every reader must read them all.
  // And a snapshots DLQ that takes small records only: a letter of a large record keeps its coordinates, not its value.
  await ensureTopics(admin, [specs.webhooks, specs.snapshots, { ...specs.webhooksDlq, numPartitions: 3 }, { ...specs.snapshotsDlq, configEntries: { 'max.message.bytes': '16384' } }, ...enricherTopicSpecs(internal)]);
  await admin.disconnect();
  producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner });
  await producer.connect();

  // A letter of the earlier format: an Avro envelope (schemas/dead-letter.avsc), no headers.
  const envelopeId = await registry.registerFile(valueSubject(names.webhooksDlq), DEAD_LETTER_SCHEMA_FILE);
  const envelope = await registry.encode(envelopeId, {
    source_topic: names.webhooks, source_partition: 1, source_offset: 5, source_key: Buffer.from('old-key'), source_value: Buffer.from('old-format webhook'),
    stage: 'enricher', error_class: 'decode', error_message: 'written before the header format', failed_at: Date.UTC(2025, 0, 1),
  });
  await producer.send({ topic: names.webhooksDlq, acks: -1, messages: [{ key: Buffer.from('old-key'), value: envelope, partition: 0 }] });

  // Letters of the current format, as the stages write them.
  const snapshotSchemaId = await registry.registerFile(valueSubject(names.snapshots), SNAPSHOT_SCHEMA_FILE);
  snapshotBytes = await registry.encode(snapshotSchemaId, { resource_type: 'Order', resource_id: 'o1', version: 2, fetched_at: 0, deleted: false, content_hash: 'h', body: '{}', source_event_ids: [], source_events: [], sources: [] });
  const limitOf = await readMessageLimits(kafka, [names.webhooksDlq, names.snapshotsDlq]);
  await createDeadLetterWriter(producer, 'sink', limitOf).send([
    deadLetterFor(names.webhooksDlq, names.webhooks, 2, { offset: '11', key: Buffer.from('wh-key'), value: Buffer.from('not avro') }, 'decode', 'bad magic byte'),
    deadLetterFor(names.snapshotsDlq, names.snapshots, 0, { offset: '3', key: Buffer.from('Order:o1'), value: snapshotBytes }, 'version-conflict', 'version 2 is stored with another hash'),
    deadLetterFor(names.snapshotsDlq, names.snapshots, 1, { offset: '6', key: Buffer.from('Order:big'), value: Buffer.alloc(20_000, 120) }, 'rejected-by-database', 'SQLSTATE 22P05'),
  ]);
  await createDeadLetterWriter(producer, 'enricher', limitOf).send([
    deadLetterFor(names.webhooksDlq, internal.requests, 4, { offset: '8', key: Buffer.from('Contract:c9'), value: Buffer.from('{"type":"Contract","id":"c9"}') }, 'not-found', 'HTTP 404 for the whole window'),
  ]);
}, 60_000);

afterAll(async () => {
  await producer?.disconnect();
});

const lines = (text: string) => text.split('\n').filter(Boolean);

describe('billing-loader dlq', () => {
  it('--help describes each subcommand; bad arguments are one line and exit 2', async () => {
    for (const sub of ['list', 'show', 'redrive']) {
      const help = await dlq(sub, '--help');
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('KAFKA_BROKERS');
    }
    const badId = await dlq('show', 'nonsense');
    expect(badId.code).toBe(2);
    expect(badId.stderr).toContain('expected a letter id');
    const missing = await dlq('show', `${names.webhooksDlq}:0:999`);
    expect(missing.code).toBe(2);
    expect(lines(missing.stderr)).toEqual([`billing-loader: no dead letter at ${names.webhooksDlq}:0:999 (see dlq list)`]);
    const unselected = await dlq('redrive');
    expect(unselected.code).toBe(2);
    expect(unselected.stderr).toContain('choose the letters');
    const badTime = await dlq('list', '--since', 'yesterday');
    expect(badTime.code).toBe(2);
  }, 60_000);

  it('lists letters of both formats from every partition, filtered by stage, error class and time', async () => {
    const all = await dlq('list');
    expect(all.code, all.stderr).toBe(0);
    const rows = lines(all.stdout).map((l) => l.split('\t'));
    expect(rows.map((r) => [r[2], r[3], r[4]]).sort()).toEqual(
      [
        ['enricher', 'decode', `${names.webhooks}:1:5`],
        ['sink', 'decode', `${names.webhooks}:2:11`],
        ['enricher', 'not-found', `${internal.requests}:4:8`],
        ['sink', 'version-conflict', `${names.snapshots}:0:3`],
        ['sink', 'rejected-by-database', `${names.snapshots}:1:6`],
      ].sort(),
    );
    expect(new Set(rows.map((r) => r[0]?.split(':')[1])).size).toBeGreaterThan(1); // letters on several DLQ partitions
    const bySink = lines((await dlq('list', '--stage', 'sink')).stdout);
    expect(bySink).toHaveLength(3);
    const notFound = lines((await dlq('list', '--error-class', 'not-found', '--json')).stdout).map((l) => JSON.parse(l) as { errorClass: string; source: { topic: string } });
    expect(notFound).toEqual([expect.objectContaining({ errorClass: 'not-found', source: { topic: internal.requests, partition: 4, offset: '8' } })]);
    // The old letter failed on 2025-01-01, the others now.
    expect(lines((await dlq('list', '--until', '2025-06-01T00:00:00Z')).stdout)).toHaveLength(1);
    expect(lines((await dlq('list', '--since', '2025-06-01T00:00:00Z', '--dlq', 'webhooks')).stdout)).toHaveLength(2);
    expect(lines((await dlq('list', '--error-class', 'decode', '--error-class', 'not-found')).stdout)).toHaveLength(3);
  }, 90_000);

  it('shows one letter: context, key, and the value decoded (Avro through the registry, an old envelope unwrapped)', async () => {
    const rows = lines((await dlq('list', '--json')).stdout).map((l) => JSON.parse(l) as { id: string; errorClass: string; stage: string });
    const conflict = rows.find((r) => r.errorClass === 'version-conflict');
    const shown = await dlq('show', conflict?.id as string);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      format: 'headers', stage: 'sink', errorClass: 'version-conflict', key: 'Order:o1', redriven: null,
      source: { topic: names.snapshots, partition: 0, offset: '3' },
      value: { encoding: 'avro', value: { resource_type: 'Order', resource_id: 'o1', version: 2 } },
    });
    const old = rows.find((r) => r.errorClass === 'decode' && r.stage === 'enricher');
    expect(JSON.parse((await dlq('show', old?.id as string)).stdout)).toMatchObject({
      format: 'envelope', errorMessage: 'written before the header format', key: 'old-key', value: { encoding: 'text', value: 'old-format webhook' }, failedAt: '2025-01-01T00:00:00.000Z',
    });
    const big = rows.find((r) => r.errorClass === 'rejected-by-database');
    expect(JSON.parse((await dlq('show', big?.id as string)).stdout)).toMatchObject({ key: 'Order:big', value: null, valueNotKeptBytes: 20_000 });
    const request = rows.find((r) => r.errorClass === 'not-found');
    expect(JSON.parse((await dlq('show', request?.id as string)).stdout)).toMatchObject({ value: { encoding: 'json', value: { type: 'Contract', id: 'c9' } } });
  }, 60_000);

  it('redrives the originals to their source topics once: a rerun and a concurrent run send nothing again', async () => {
    const dry = await dlq('redrive', '--all', '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    expect(lines(dry.stdout).filter((l) => l.startsWith('would redrive'))).toHaveLength(3);
    const skipped = lines(dry.stdout).filter((l) => l.startsWith('skipped'));
    expect(skipped).toHaveLength(2);
    expect(skipped).toEqual(expect.arrayContaining([expect.stringContaining('the source value was not kept (20000 bytes)'), expect.stringContaining(': version-conflict: ')]));
    expect(await readAll(names.webhooks)).toHaveLength(0);

    // Two at once, then a third: each letter is sent back exactly once.
    const [a, b] = await Promise.all([dlq('redrive', '--all'), dlq('redrive', '--all')]);
    expect([a.code, b.code], `${a.stderr}\n${b.stderr}`).toContain(0);
    const again = await dlq('redrive', '--all');
    expect(again.code, again.stderr).toBe(0);
    expect(lines(again.stdout).filter((l) => l.startsWith('redriven'))).toEqual([]);
    expect(again.stderr).toContain('3 already redriven');

    const webhooks = await readAll(names.webhooks);
    expect(webhooks.map((m) => [m.key?.toString(), m.value?.toString()]).sort()).toEqual([
      ['old-key', 'old-format webhook'],
      ['wh-key', 'not avro'],
    ]);
    for (const m of webhooks) expect(m.headers?.['billing_loader.dlq.redriven_from']?.toString()).toMatch(new RegExp(`^${names.webhooksDlq.replace(/\./g, '\\.')}:\\d+:\\d+$`));
    const requests = await readAll(internal.requests);
    expect(requests.map((m) => [m.key?.toString(), m.value?.toString()])).toEqual([['Contract:c9', '{"type":"Contract","id":"c9"}']]);
    expect(await readAll(names.snapshots)).toHaveLength(0); // the version conflict and the letter without its value stay in their DLQ
    expect(lines((await dlq('list', '--stage', 'enricher')).stdout).every((l) => l.split('\t')[5] === 'redriven')).toBe(true);
  }, 120_000);
});
