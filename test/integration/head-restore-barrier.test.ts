import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { openHeadCache, type HeadCache } from '../../src/enricher/head-cache.js';
import { catchUpHeads } from '../../src/enricher/head-catch-up.js';
import { encodeHead, writeRestoreBarrier } from '../../src/enricher/head-store.js';
import { createKafka } from '../../src/kafka/client.js';
import { fencePreviousOwner } from '../../src/kafka/fence-previous-owner.js';
import { createTransactionalProducer } from '../../src/kafka/producers.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-head-restore', log: silentLogger });
const head = (version: number) => encodeHead({ version, contentHash: `h${version}`, deleted: false, fetchedAt: 1 });
const dir = mkdtempSync(join(tmpdir(), 'head-restore-'));
const closing: { disconnect?(): Promise<void>; close?(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.allSettled(closing.map((c) => c.disconnect?.() ?? c.close?.()));
  rmSync(dir, { recursive: true, force: true });
});

async function heads(name: string) {
  const topic = `${config.topicPrefix}.${name}.enricher.heads`;
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [{ topic, numPartitions: 1, configEntries: { 'cleanup.policy': 'compact' } }]);
  await admin.disconnect();
  const owner = createTransactionalProducer(kafka, `${topic}.owner`);
  const other = createTransactionalProducer(kafka, `${topic}.other`);
  const cache: HeadCache = openHeadCache(join(dir, name), topic);
  closing.push(owner, other, cache);
  await Promise.all([owner.connect(), other.connect()]);
  const commit = async (key: string, version: number) => {
    const t = await owner.transaction();
    await t.send({ topic, messages: [{ key, value: head(version), partition: 0 }] });
    await t.commit();
  };
  /** As the partition's new owner does: fence the previous holder of the id, commit a barrier, catch up to it. */
  const takeOver = async () => {
    const next = createTransactionalProducer(kafka, `${topic}.owner`);
    closing.push(next);
    await next.connect();
    await fencePreviousOwner(next);
    const barrier = await writeRestoreBarrier(next, topic, 0);
    return catchUpHeads(kafka, topic, [0], cache, new Map([[0, barrier]]));
  };
  return { topic, other, cache, commit, takeOver };
}

/**
 * A heads partition with a transaction still open in it (a writer the owner's fence does not
 * reach, or one the coordinator has not completed yet after a broker restart): heads committed
 * after it must not be lost by the catch-up. Read to the end kafkajs reports (the last stable
 * offset), a catch-up stopped before the open transaction and came back without them.
 */
describe('catching the heads up to a barrier', () => {
  it('from an empty cache: waits for a transaction open at the start and keeps every head committed before the barrier', async () => {
    const h = await heads('empty');
    // The open transaction comes first in the partition: the last stable offset is then its start.
    const open = await h.other.transaction();
    await open.send({ topic: h.topic, messages: [{ key: 'Contract:b', value: head(1), partition: 0 }] });
    await h.commit('Contract:a', 1);
    await h.commit('Contract:c', 1);

    const catchingUp = h.takeOver();
    expect(await Promise.race([catchingUp.then(() => 'returned'), sleep(3000).then(() => 'waiting')])).toBe('waiting');
    await open.commit();
    const [caught] = await catchingUp;
    expect(caught?.full).toBe(true);
    expect(['Contract:a', 'Contract:b', 'Contract:c'].map((k) => h.cache.partition(0).get(k)?.version)).toEqual([1, 1, 1]);
  }, 60_000);

  it('resuming from the cache mark: waits for a transaction open just after the mark', async () => {
    const h = await heads('resume');
    await h.commit('Contract:a', 1);
    await catchUpHeads(kafka, h.topic, [0], h.cache);
    const mark = h.cache.partition(0).mark();
    expect(mark).toBeDefined();
    // While another instance owned the partition: a transaction left open, then heads committed after it.
    const open = await h.other.transaction();
    await open.send({ topic: h.topic, messages: [{ key: 'Contract:b', value: head(1), partition: 0 }] });
    await h.commit('Contract:a', 2);
    await h.commit('Contract:c', 1);

    const catchingUp = h.takeOver();
    expect(await Promise.race([catchingUp.then(() => 'returned'), sleep(3000).then(() => 'waiting')])).toBe('waiting');
    await open.commit();
    const [caught] = await catchingUp;
    expect(caught?.full).toBe(false);
    expect(['Contract:a', 'Contract:b', 'Contract:c'].map((k) => h.cache.partition(0).get(k)?.version)).toEqual([2, 1, 1]);
    // The mark moved past the barrier: the next resume starts after everything read here.
    expect(BigInt(h.cache.partition(0).mark()?.offset ?? '0')).toBeGreaterThan(BigInt(mark?.offset ?? '0'));
  }, 60_000);

  // Two preparations of one partition that overlapped: the later one's catch-up had moved the
  // mark past the earlier one's barrier, and the earlier one then waited for its barrier's key
  // from behind it, for good; every later preparation queued behind it.
  it('ends when its barrier lies before the cache mark, and keeps the heads read past it', async () => {
    const h = await heads('behind');
    await h.commit('Contract:a', 1);
    const next = createTransactionalProducer(kafka, `${h.topic}.owner`);
    closing.push(next);
    await next.connect();
    await fencePreviousOwner(next);
    const earlier = await writeRestoreBarrier(next, h.topic, 0);
    const later = await writeRestoreBarrier(next, h.topic, 0);
    await catchUpHeads(kafka, h.topic, [0], h.cache, new Map([[0, later]]));
    const mark = h.cache.partition(0).mark()?.offset;

    const [caught] = await catchUpHeads(kafka, h.topic, [0], h.cache, new Map([[0, earlier]]));
    expect(caught?.full).toBe(false);
    expect(h.cache.partition(0).get('Contract:a')?.version).toBe(1);
    expect(BigInt(h.cache.partition(0).mark()?.offset ?? '0')).toBeLessThanOrEqual(BigInt(mark ?? '0'));
  }, 60_000);
});
