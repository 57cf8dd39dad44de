import type { Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { quoteIdent } from '../../src/db/pool.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, type SinkHarness } from './sink-harness.js';

/**
 * `billing-loader repair sink-offsets` refusing what it cannot do safely (the whole restore is
 * test/faults/postgres-pitr-restore.test.ts). The "restored" warehouse is a second schema holding
 * a chosen part of the first one's rows; the sink's group has read everything.
 */
let h: SinkHarness;
let admin: Admin;
let restored: string;
let env: Record<string, string>;
const columns = 'resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset';
const escape = (s: string) => s.replace(/\./g, '\\.');

beforeAll(async () => {
  h = await createSinkHarness(testConfig());
  admin = h.kafka.admin();
  await admin.connect();
  restored = `${h.schema}_restored`;
  await migrate(h.pool, { schema: restored, log: h.log });
  env = {
    KAFKA_BROKERS: h.config.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: h.config.schemaRegistryUrl,
    DATABASE_URL: h.config.databaseUrl,
    DATABASE_SCHEMA: restored,
    TOPIC_PREFIX: h.config.topicPrefix,
    LOG_LEVEL: 'warn',
  };
  await h.produceSnapshots(Array.from({ length: 60 }, (_, i) => snapshot('Dunning', `d-${i}`, 1, { i })));
  const sink = await h.startSink();
  await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 60, { what: 'loaded' });
  await sink.stop();
});
afterAll(async () => {
  await admin?.disconnect();
  await h?.pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(restored)} CASCADE`);
  await h?.close();
});

/** The partition holding the most records, and its end. */
async function fullestPartition(): Promise<{ partition: number; high: number }> {
  const ranges = await admin.fetchTopicOffsets(h.names.snapshots);
  const best = ranges.reduce((a, b) => (Number(b.high) > Number(a.high) ? b : a));
  return { partition: best.partition, high: Number(best.high) };
}

describe('repair sink-offsets: what it refuses', () => {
  it('refuses when retention deleted records the warehouse lacks, naming them; --allow-truncated-log moves to the log start', async () => {
    const { partition, high } = await fullestPartition();
    expect(high).toBeGreaterThanOrEqual(3);
    // The restored warehouse holds the partition's first record only; the log now starts at 2.
    await h.pool.query(`INSERT INTO ${quoteIdent(restored)}.resource_versions (${columns}) SELECT ${columns} FROM ${h.table('resource_versions')} WHERE kafka_partition = $1 AND kafka_offset = 0`, [partition]);
    await admin.deleteTopicRecords({ topic: h.names.snapshots, partitions: [{ partition, offset: '2' }] });

    const refused = await runCli(['repair', 'sink-offsets', '--dry-run'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`^billing-loader: cannot rewind the sink to the warehouse: ${escape(h.names.snapshots)}:${partition}: the warehouse ends at offset 1 but retention deleted the log up to 2; records 1\\.\\.1 cannot be read again; --allow-truncated-log`, 'm'));

    const allowed = await runCli(['repair', 'sink-offsets', '--allow-truncated-log'], env);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toMatch(new RegExp(`^\\S+ ${escape(h.names.snapshots)} ${partition} ${high} -> 2 \\(log start: records before it are lost\\)$`, 'm'));
    const [committed] = await admin.fetchOffsets({ groupId: `${h.config.topicPrefix}.sink`, topics: [h.names.snapshots] });
    expect(committed?.partitions.find((p) => p.partition === partition)?.offset).toBe('2');
  });

  it('refuses when the warehouse holds offsets past the end of the log (another cluster, a recreated topic)', async () => {
    const { partition } = await fullestPartition();
    await h.pool.query(
      `INSERT INTO ${quoteIdent(restored)}.resource_versions (${columns})
       SELECT resource_type, resource_id, version + 1, fetched_at, deleted, jsonb_build_object('moved', true), 'other', source_event_ids, source_events, customer_id, kafka_partition, 999999
         FROM ${h.table('resource_versions')} WHERE kafka_partition = $1 ORDER BY kafka_offset LIMIT 1`,
      [partition],
    );
    const refused = await runCli(['repair', 'sink-offsets'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`${escape(h.names.snapshots)}:${partition}: the warehouse holds offset 999999 but the log ends at \\d+`));
  });
});
