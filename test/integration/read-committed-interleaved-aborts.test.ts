import { describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { createTransactionalProducer } from '../../src/kafka/producers.js';
import { readToEnd } from '../../src/kafka/read-to-end.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-interleaved-aborts', log: silentLogger });

/**
 * Two transactions of different producers interleaved in one partition, both aborted, the later
 * one first: A writes at 0 (open), B writes at 1 and aborts (marker at 2), A aborts (marker at 3).
 * The broker lists aborted transactions in the order of their markers, [B, A]. kafkajs 2.2.4's
 * read-committed filter took that list in order, one entry per record, so A's record at 0 (below
 * B's first offset) was delivered as if committed. The loader's partitions written by several
 * transactional ids (the requests topic's follow-ups, the dead-letter topic) are read this way.
 */
describe('read committed, with aborted transactions interleaved', () => {
  it('delivers no record of an aborted transaction', async () => {
    const topic = `${config.topicPrefix}.interleaved-aborts`;
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    const a = createTransactionalProducer(kafka, `${topic}.a`);
    const b = createTransactionalProducer(kafka, `${topic}.b`);
    const plain = kafka.producer();
    await Promise.all([a.connect(), b.connect(), plain.connect()]);
    try {
      const ta = await a.transaction();
      await ta.send({ topic, acks: -1, messages: [{ key: 'a', value: 'aborted-a', partition: 0 }] });
      const tb = await b.transaction();
      await tb.send({ topic, acks: -1, messages: [{ key: 'b', value: 'aborted-b', partition: 0 }] });
      await tb.abort();
      await ta.abort();
      await plain.send({ topic, acks: -1, messages: [{ key: 'c', value: 'kept', partition: 0 }] });
    } finally {
      await Promise.allSettled([a.disconnect(), b.disconnect(), plain.disconnect()]);
    }

    const seen: string[] = [];
    await readToEnd(kafka, topic, (_partition, m) => seen.push(m.value?.toString() ?? ''));
    expect(seen).toEqual(['kept']);
  }, 60_000);
});
