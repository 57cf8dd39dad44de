import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { startDelayForwarder } from '../../src/enricher/delay-forwarder.js';
import { createEnricherMetrics } from '../../src/enricher/enricher-metrics.js';
import { createHealth } from '../../src/health.js';
import { createKafka } from '../../src/kafka/client.js';
import { createTransactionalProducer } from '../../src/kafka/producers.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { enricherTopics, enricherTopicSpecs } from '../../src/wire/topics.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';

const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-commit-past-markers', log: silentLogger });
const closing: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => undefined);
});

/**
 * A partition whose records end in transaction markers with no record after them (every
 * fetcher preparation commits one into each partition it may have left a hanging transaction
 * in). kafkajs gives such a fetch to no handler and, with autoCommit off, commits nothing: the
 * stage's group stayed before the markers, which its watch counts as lag that never goes, so the
 * watchdog took the stage for stalled, restarted it, and finally failed its liveness.
 */
describe('a stage reading a partition that ends in markers only', () => {
  it('commits its group past them', async () => {
    const internal = enricherTopics(`${config.topicPrefix}.markers`);
    const admin = kafka.admin();
    await admin.connect();
    closing.push(() => admin.disconnect());
    await ensureTopics(admin, enricherTopicSpecs(internal, 2));
    const groupId = `${config.topicPrefix}.markers.delayed`;
    const forwarder = await startDelayForwarder({ kafka, log: silentLogger, metrics: createEnricherMetrics(new Registry()), health: createHealth(), internal, groupId });
    closing.push(() => forwarder.stop());

    // Three transactions that write nothing into partition 1 but their markers.
    const producer = createTransactionalProducer(kafka, `${internal.requests}.markers-writer`);
    await producer.connect();
    closing.push(() => producer.disconnect());
    for (let i = 0; i < 3; i++) {
      const transaction = await producer.transaction();
      await transaction.addPartitions([{ topic: internal.delayed, partitions: [{ partition: 1 }] }]);
      await transaction.commit();
    }
    const end = await waitFor(async () => {
      const o = (await admin.fetchTopicOffsets(internal.delayed)).find((p) => p.partition === 1)?.offset;
      return o === '3' ? o : undefined;
    }, { what: 'three markers in delayed partition 1' });

    const committed = await waitFor(
      async () => {
        const [group] = await admin.fetchOffsets({ groupId, topics: [internal.delayed] });
        const offset = group?.partitions.find((p) => p.partition === 1)?.offset;
        return offset === end ? offset : undefined;
      },
      { timeoutMs: 30_000, what: "the forwarder's group committed at the partition's end" },
    );
    expect(committed).toBe('3');
  });
});
