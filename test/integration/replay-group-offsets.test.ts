import type { Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, type SinkHarness } from './sink-harness.js';

/** `billing-loader replay` moving the sink's group (the built CLI, as an operator runs it). */
let h: SinkHarness;
let admin: Admin;
let env: Record<string, string>;
let groupId: string;
let beforeT: number;
const perRound = 60;

beforeAll(async () => {
  h = await createSinkHarness(testConfig());
  admin = h.kafka.admin();
  await admin.connect();
  groupId = `${h.config.topicPrefix}.sink`;
  env = {
    KAFKA_BROKERS: h.config.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: h.config.schemaRegistryUrl,
    DATABASE_URL: h.config.databaseUrl,
    DATABASE_SCHEMA: h.config.databaseSchema,
    TOPIC_PREFIX: h.config.topicPrefix,
    LOG_LEVEL: 'warn',
  };
  await h.produceSnapshots(Array.from({ length: perRound }, (_, i) => snapshot('Dunning', `d-${i}`, 1, { i })));
  beforeT = Date.now() + 1;
  await waitFor(() => Date.now() > beforeT + 5, { what: 'clock moved past the first round' });
  await h.produceSnapshots(Array.from({ length: perRound }, (_, i) => snapshot('Dunning', `d-${i}`, 2, { i, round: 2 })));
});
afterAll(async () => {
  await admin?.disconnect();
  await h?.close();
});

async function committed(topic: string): Promise<Map<number, number>> {
  const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((t?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
}

async function ends(topic: string): Promise<Map<number, number>> {
  return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
}

describe('replay: moving a consumer group', () => {
  it('refuses while the sink runs, with one clear line', async () => {
    const sink = await h.startSink();
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 2 * perRound, { what: 'loaded' });
    const result = await runCli(['replay', '--group', 'sink', '--to-beginning'], env);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^billing-loader: consumer group '.*\.sink' has 1 active member\(s\) .*; stop the sink first/)]);
    await sink.stop();
  });

  it('--dry-run prints the moves and changes nothing; then --to-beginning moves every partition to its start', async () => {
    const before = await committed(h.names.snapshots);
    expect([...before.values()].reduce((a, b) => a + b, 0)).toBe(2 * perRound);
    const dry = await runCli(['replay', '--to-beginning', '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(new RegExp(`^${h.names.snapshots.replace(/\./g, '\\.')} \\d+ \\d+ -> 0$`, 'm'));
    expect(dry.stderr).toMatch(/dry run: nothing changed/);
    expect(await committed(h.names.snapshots)).toEqual(before);

    const real = await runCli(['replay', '--to-beginning'], env);
    expect(real.code, real.stderr).toBe(0);
    expect([...(await committed(h.names.snapshots)).values()].every((o) => o === 0)).toBe(true);
    expect([...(await committed(h.names.webhooks)).values()].every((o) => o === 0)).toBe(true);
  });

  it('--to-timestamp moves to the first record at or after the time', async () => {
    const result = await runCli(['replay', '--to-timestamp', new Date(beforeT).toISOString()], env);
    expect(result.code, result.stderr).toBe(0);
    // Every partition now sits at the start of the second round: end - (records of round 2 in it).
    const { rows } = await h.pool.query(`SELECT kafka_partition AS p, count(*)::int AS n FROM ${h.table('resource_versions')} WHERE version = 2 GROUP BY 1`);
    const secondRound = new Map(rows.map((r) => [r.p as number, r.n as number]));
    const end = await ends(h.names.snapshots);
    for (const [partition, offset] of await committed(h.names.snapshots)) {
      expect(offset, `partition ${partition}`).toBe((end.get(partition) ?? 0) - (secondRound.get(partition) ?? 0));
    }
  });

  it('--to-offsets moves only the named partitions of the one topic', async () => {
    const before = await committed(h.names.snapshots);
    const [p] = [...(await ends(h.names.snapshots))].find(([, e]) => e >= 2) ?? [];
    expect(p).toBeDefined();
    const result = await runCli(['replay', '--topic', h.names.snapshots, '--to-offsets', `${p}:1`], env);
    expect(result.code, result.stderr).toBe(0);
    const after = await committed(h.names.snapshots);
    for (const [partition, offset] of after) expect(offset).toBe(partition === p ? 1 : before.get(partition));

    const bad = await runCli(['replay', '--to-offsets', '0:1'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/single --topic/);
  });
});
