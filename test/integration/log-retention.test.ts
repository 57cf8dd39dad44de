import type { Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEnricher, enricherGroupId } from '../../src/enricher/enricher.js';
import { enricherTopicSpecs, enricherTopics } from '../../src/wire/topics.js';
import { createHealth } from '../../src/health.js';
import { partitionOfKey } from '../../src/kafka/topic-checks.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { topicNames } from '../../src/wire/topics.js';
import { errorMessage } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, type SinkHarness } from './sink-harness.js';

/** A logger that keeps what it was told, for assertions on a warning. */
function recordingLogger(): Logger & { lines: { level: string; msg: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const make = (base: Record<string, unknown>): Logger => ({
    debug: () => {},
    info: () => {},
    warn: (msg, fields) => lines.push({ level: 'warn', msg, fields: { ...base, ...fields } }),
    error: (msg, fields) => lines.push({ level: 'error', msg, fields: { ...base, ...fields } }),
    child: (fields) => make({ ...base, ...fields }),
  });
  return Object.assign(make({}), { lines });
}

async function topicConfig(admin: Admin, topic: string): Promise<Record<string, string>> {
  const { resources } = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false });
  return Object.fromEntries((resources[0]?.configEntries ?? []).map((e) => [e.configName, e.configValue]));
}

describe('the webhook and snapshot logs never expire', () => {
  let h: SinkHarness;
  let admin: Admin;
  beforeAll(async () => {
    h = await createSinkHarness(testConfig());
    admin = h.kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.disconnect();
    await h?.close();
  });

  it('creates <prefix>.webhooks and <prefix>.snapshots with retention.ms=-1 on the topic; the heads topic stays compacted', async () => {
    for (const topic of [h.names.webhooks, h.names.snapshots]) {
      const { resources } = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false });
      const entry = resources[0]?.configEntries.find((e) => e.configName === 'retention.ms');
      expect(entry?.configValue, topic).toBe('-1');
      expect(entry?.isDefault, `${topic}: set on the topic, not inherited`).toBe(false);
    }
    const internal = enricherTopics(h.config.topicPrefix);
    await ensureTopics(admin, enricherTopicSpecs(internal));
    expect((await topicConfig(admin, internal.heads))['cleanup.policy']).toBe('compact');
  });

  it('warns at start, naming the topic and the setting, when an existing log expires', async () => {
    const config = testConfig();
    const names = topicNames(config.topicPrefix);
    // ensureTopics waits for leaders itself: kafkajs's waitForLeaders gives up on a topic the broker does not host yet.
    await ensureTopics(
      admin,
      [names.webhooks, names.snapshots].map((topic) => ({ topic, numPartitions: 6, configEntries: { 'retention.ms': String(3600_000) } })),
    );
    const log = recordingLogger();
    const sh = await createSinkHarness(config);
    try {
      const { startSink } = await import('../../src/sink/sink.js');
      const sink = await startSink({ log, metrics: createMetrics(), health: createHealth() }, config);
      await sink.stop();
      const warnings = log.lines.filter((l) => l.level === 'warn' && l.msg === 'log topic expires records: replay and rebuild cannot go back further');
      expect(warnings.map((w) => [w.fields.topic, w.fields.setting, w.fields.value]).sort()).toEqual([
        [names.snapshots, 'retention.ms', '3600000'],
        [names.webhooks, 'retention.ms', '3600000'],
      ]);
    } finally {
      await sh.close();
    }
  });
});

describe('a consumer whose committed offset was deleted stops instead of skipping', () => {
  let h: SinkHarness;
  let admin: Admin;
  beforeAll(async () => {
    h = await createSinkHarness(testConfig());
    admin = h.kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.disconnect();
    await h?.close();
  });

  it('the sink refuses to start with one line naming group, topic, partition, offsets and the fix; replay can still move the group', async () => {
    const groupId = `${h.config.topicPrefix}.sink`;
    await h.produceSnapshots(Array.from({ length: 30 }, (_, i) => snapshot('Dunning', `d-${i}`, 1, { i })));
    const ends = await admin.fetchTopicOffsets(h.names.snapshots);
    const full = ends.find((p) => Number(p.high) >= 2) as { partition: number; high: string };
    // The group read nothing yet (offset 0 everywhere); then the first records of one partition expire.
    await admin.setOffsets({ groupId, topic: h.names.snapshots, partitions: ends.map((p) => ({ partition: p.partition, offset: '0' })) });
    await admin.deleteTopicRecords({ topic: h.names.snapshots, partitions: [{ partition: full.partition, offset: '1' }] });

    const err = await h.startSink().then(
      (s) => s.stop().then(() => undefined),
      (e: unknown) => e as Error,
    );
    expect(err, 'the sink started and would have skipped the deleted record').toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain(`group ${groupId}`);
    expect(message).toContain(`${h.names.snapshots} partition ${full.partition}`);
    expect(message).toMatch(/committed offset 0\b.*earliest available 1\b/);
    expect(message).toContain('billing-loader replay');
    expect(await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)).toBe(0);

    const env = {
      KAFKA_BROKERS: h.config.kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: h.config.schemaRegistryUrl,
      DATABASE_URL: h.config.databaseUrl,
      DATABASE_SCHEMA: h.config.databaseSchema,
      TOPIC_PREFIX: h.config.topicPrefix,
      LOG_LEVEL: 'warn',
    };
    const moved = await runCli(['replay', '--group', 'sink', '--to-beginning'], env);
    expect(moved.code, moved.stderr).toBe(0);
    const sink = await h.startSink();
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 29, { what: 'the remaining records loaded' });
    await sink.stop();
  });

  it("the enricher's router refuses to start the same way", async () => {
    const config = { ...h.config };
    const groupId = enricherGroupId(config.topicPrefix);
    await h.produceWebhooks(Array.from({ length: 30 }, (_, i) => ({ event_id: `e-${i}`, event: 'CustomerCreated', received_at: Date.now(), body: '{}' })));
    const ends = await admin.fetchTopicOffsets(h.names.webhooks);
    const full = ends.find((p) => Number(p.high) >= 2) as { partition: number; high: string };
    await admin.setOffsets({ groupId, topic: h.names.webhooks, partitions: ends.map((p) => ({ partition: p.partition, offset: '0' })) });
    await admin.deleteTopicRecords({ topic: h.names.webhooks, partitions: [{ partition: full.partition, offset: '1' }] });
    const reader = { getResource: () => Promise.reject(new Error('no reads expected')) };
    const err = await startEnricher({ kafka: h.kafka, registry: h.registry, reader, log: h.log, metrics: createMetrics(), health: createHealth() }, config).then(
      (e) => e.stop().then(() => undefined),
      (e: unknown) => e as Error,
    );
    expect(err, 'the router started and would have skipped the deleted webhook').toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain(`group ${groupId}`);
    expect(message).toContain(`${h.names.webhooks} partition ${full.partition}`);
    expect(message).toMatch(/committed offset 0\b.*earliest available 1\b/);
    expect(message).toContain('billing-loader replay --group enricher');
  });
});

describe('a running sink whose position is deleted under it', () => {
  let h: SinkHarness;
  let admin: Admin;
  beforeAll(async () => {
    h = await createSinkHarness(testConfig());
    admin = h.kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.disconnect();
    await h?.close();
  });

  it('stops consuming with the same line instead of letting kafkajs jump to the earliest offset', async () => {
    // Resources of partition 0 only: every record below is in one partition.
    const ids = Array.from({ length: 400 }, (_, i) => `d-${i}`).filter((id) => partitionOfKey(`Dunning:${id}`, 6) === 0);
    const batch = (from: number, to: number) => ids.slice(from, to).map((id) => snapshot('Dunning', id, 1, { id }));
    const rows = () => h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`);
    const log = recordingLogger();
    const { startSink } = await import('../../src/sink/sink.js');
    const sink = await startSink({ log, metrics: createMetrics(), health: createHealth() }, h.config);
    try {
      await h.produceSnapshots(batch(0, 10));
      await waitFor(async () => (await rows()) === 10, { what: 'first records loaded' });

      // The sink is held in a write (a table lock) while the records after its position are deleted.
      const locker = await h.pool.connect();
      try {
        await locker.query('BEGIN');
        await locker.query(`LOCK TABLE ${h.table('resource_versions')} IN ACCESS EXCLUSIVE MODE`);
        await h.produceSnapshots(batch(10, 20));
        await waitFor(
          async () => (await h.count(`SELECT count(*) n FROM pg_stat_activity WHERE application_name = 'billing-loader sink' AND wait_event_type = 'Lock'`)) > 0,
          { what: 'the sink waiting for the lock' },
        );
        await h.produceSnapshots(batch(20, 30));
        const [end] = (await admin.fetchTopicOffsets(h.names.snapshots)).filter((p) => p.partition === 0);
        await admin.deleteTopicRecords({ topic: h.names.snapshots, partitions: [{ partition: 0, offset: (end as { high: string }).high }] });
      } finally {
        await locker.query('COMMIT');
        locker.release();
      }
      await h.produceSnapshots(batch(30, 35));

      const refusal = () => log.lines.find((l) => l.level === 'error' && /is not in the log/.test(errorMessage(l.fields.err)));
      await waitFor(async () => refusal() ?? (await rows()) === 25, { what: 'the refusal, or the records after the gap loaded', timeoutMs: 60_000 });
      expect(await rows(), 'records after the deleted ones were loaded: the gap was skipped').toBe(20);
      const message = errorMessage(refusal()?.fields.err);
      expect(message.split('\n')).toHaveLength(1);
      expect(message).toContain(`group ${h.config.topicPrefix}.sink`);
      expect(message).toMatch(new RegExp(`committed offset 20 of ${h.names.snapshots.replace(/\./g, '\\.')} partition 0 .*earliest available 30\\b`));
      expect(message).toContain('billing-loader replay --group sink');
    } finally {
      await sink.stop();
    }
  }, 120_000);
});
