import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createGroupLag } from '../../src/watch/group-lag.js';
import { createWatchMetrics } from '../../src/watch/watch-metrics.js';
import { testConfig } from '../helpers/environment.js';
import { fileTopics } from '../helpers/file-topics.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The group lag's admin client against the real broker: closed while a lag check is connecting
 * or reading, it leaves no connection behind. A stage stopped during its first check otherwise
 * kept a socket to the broker open, which kept its process up after a clean stop.
 */
const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'group-lag-close-test', log: silentLogger });
const topic = `${config.topicPrefix}.lag-close`;
const brokerPorts = new Set(config.kafkaBrokers.map((b) => Number(b.split(':')[1])));

/** Sockets of this process connected to the broker. */
function brokerSockets(): number {
  const handles = (process as unknown as { _getActiveHandles: () => unknown[] })._getActiveHandles();
  return handles.filter((h) => h instanceof Socket && h.remotePort !== undefined && brokerPorts.has(h.remotePort)).length;
}

fileTopics(kafka, [{ topic, numPartitions: 2 }]);

describe('group lag close', () => {
  it.each([
    ['while its first check connects', 0],
    ['while a check reads offsets', 1],
  ])('leaves no connection to the broker when closed %s', async (_, checksBefore) => {
    const groupId = `${topic}.group-${checksBefore}`;
    const lag = createGroupLag({ kafka, groupId, stage: 'test', metrics: createWatchMetrics(createMetrics()) });
    // A real member of the group: its GROUP_JOIN gives the lag its partitions. It leaves before the
    // sockets are counted (the lag keeps the assignment it was given).
    const consumer = lag.attach(kafka.consumer({ groupId }));
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => (joined = true));
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async () => undefined });
    await waitFor(() => joined, { what: 'the consumer joined its group', timeoutMs: 60_000, intervalMs: 100 });
    await consumer.disconnect();
    const before = brokerSockets();
    for (let i = 0; i < checksBefore; i++) expect((await lag.sample()).partitions).toHaveLength(2);
    const check = lag.sample().catch(() => undefined);
    await lag.close();
    await check;
    // A connection kafkajs opens after the close would show within this wait.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(brokerSockets()).toBe(before);
  });
});
