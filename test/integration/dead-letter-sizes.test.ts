import { afterAll, describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { createDeadLetterWriter } from '../../src/kafka/dead-letters.js';
import { readMessageLimits } from '../../src/kafka/message-limits.js';
import { createIdempotentProducer } from '../../src/kafka/producers.js';
import { readToEnd } from '../../src/kafka/read-to-end.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { createRegistry } from '../../src/registry/registry.js';
import { deadLetterFor, readDeadLetter, type StoredDeadLetter } from '../../src/wire/dead-letter.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-dead-letter-sizes', log: silentLogger });
const registry = createRegistry(config.schemaRegistryUrl);
const producer = createIdempotentProducer(kafka);
afterAll(() => producer.disconnect());

/**
 * A batch of bad records dead-letters every one of them in one send: a batch of large snapshots
 * refused together (a wrong schema, a foreign event id) made one produce request larger than the
 * DLQ accepts, the broker refused it (MESSAGE_TOO_LARGE, which no retry cures) and the sink
 * retried that batch for ever. The DLQ's limit here is small so that a few records exceed it.
 */
describe('dead letters against the DLQ size limit', () => {
  it('splits a batch of dead letters into sends the DLQ accepts, and keeps a source value too large to fit only by its coordinates', async () => {
    const dlq = `${config.topicPrefix}.sizes.dlq`;
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic: dlq, numPartitions: 1, configEntries: { 'max.message.bytes': '16384' } }]);
    await admin.disconnect();
    await producer.connect();
    const limitOf = await readMessageLimits(kafka, [dlq]);
    expect(limitOf(dlq)).toBe(16_384);

    const source = `${config.topicPrefix}.sizes`;
    const letters = Array.from({ length: 40 }, (_, i) => deadLetterFor(dlq, source, 0, { offset: String(i), key: Buffer.from(`k${i}`), value: Buffer.alloc(2000, 97) }, 'schema', `bad record ${i}`));
    letters.push(deadLetterFor(dlq, source, 0, { offset: '40', key: Buffer.from('k40'), value: Buffer.alloc(50_000, 98) }, 'schema', 'bad record 40'));
    await createDeadLetterWriter(producer, 'sink', limitOf).send(letters);

    const read: StoredDeadLetter[] = [];
    const reading: Promise<void>[] = [];
    await readToEnd(kafka, dlq, (partition, m) => {
      reading.push(readDeadLetter({ topic: dlq, partition, offset: m.offset }, m, (v) => registry.decode(v)).then((l) => void read.push(l)));
    });
    await Promise.all(reading);
    read.sort((a, b) => Number(a.sourceOffset) - Number(b.sourceOffset));
    expect(read.map((r) => Number(r.sourceOffset))).toEqual(Array.from({ length: 41 }, (_, i) => i));
    expect(read.slice(0, 40).every((r) => r.value?.length === 2000 && r.valueDroppedBytes === 0)).toBe(true);
    expect(read[40]).toMatchObject({ value: null, valueDroppedBytes: 50_000, key: Buffer.from('k40'), errorMessage: 'bad record 40' });
  });
});
