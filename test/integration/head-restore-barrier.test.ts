import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeHead, restoreHeads, writeRestoreBarrier } from '../../src/enricher/head-store.js';
import { createKafka } from '../../src/kafka/client.js';
import { fencePreviousOwner } from '../../src/kafka/fence-previous-owner.js';
import { createTransactionalProducer } from '../../src/kafka/producers.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-head-restore', log: silentLogger });
const topic = `${config.topicPrefix}.enricher.heads`;
const head = (version: number) => encodeHead({ version, contentHash: `h${version}`, deleted: false, fetchedAt: 1 });
const producers: { disconnect(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.allSettled(producers.map((p) => p.disconnect()));
});

/**
 * A heads partition with a transaction still open in it (a writer the owner's fence does not
 * reach, or one the coordinator has not completed yet after a broker restart): heads committed
 * after it must not be lost by the restore. Read to the end kafkajs reports, the restore stopped
 * before the open transaction and came back without them.
 */
describe('restoreHeads up to a barrier', () => {
  it('waits for a transaction open in the partition and returns every head committed before the barrier', async () => {
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic, numPartitions: 1, configEntries: { 'cleanup.policy': 'compact' } }]);
    await admin.disconnect();

    const owner = createTransactionalProducer(kafka, `${topic}.owner`);
    const other = createTransactionalProducer(kafka, `${topic}.other`);
    producers.push(owner, other);
    await Promise.all([owner.connect(), other.connect()]);
    const commit = async (key: string, version: number) => {
      const t = await owner.transaction();
      await t.send({ topic, messages: [{ key, value: head(version), partition: 0 }] });
      await t.commit();
    };
    // The open transaction comes first in the partition: the last stable offset is then its
    // start, and the partition looked empty to the restore.
    const open = await other.transaction();
    await open.send({ topic, messages: [{ key: 'Contract:b', value: head(1), partition: 0 }] });
    await commit('Contract:a', 1);
    await commit('Contract:c', 1);

    // As the partition's new owner does: fence the previous holder of the id, commit a barrier, read up to it.
    const next = createTransactionalProducer(kafka, `${topic}.owner`);
    producers.push(next);
    await next.connect();
    await fencePreviousOwner(next);
    const barrier = await writeRestoreBarrier(next, topic, 0);
    const restoring = restoreHeads(kafka, topic, [0], new Map([[0, barrier]]));
    expect(await Promise.race([restoring.then(() => 'returned'), sleep(3000).then(() => 'waiting')])).toBe('waiting');
    await open.commit();
    const heads = (await restoring).get(0) ?? new Map();
    expect([...heads.keys()].sort()).toEqual(['Contract:a', 'Contract:b', 'Contract:c']);
  }, 60_000);
});
