import { describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { testConfig } from '../helpers/environment.js';
import { fileTopics } from '../helpers/file-topics.js';

/**
 * kafkajs' request queue checked its pending requests again after every check, with nothing
 * pending and no throttle: a timer of "-1,795,698,000,000 ms" (Node runs it after 1 ms, and warns
 * once with TimeoutNegativeWarning) firing about a thousand times a second on every idle broker
 * connection (kafkajs issues 1704 and 1751). Patched (patches/kafkajs+2.2.4+006): a check with
 * nothing pending and no throttle schedules nothing; a request queued behind a throttle or the
 * in-flight limit still schedules its check.
 */
const config = testConfig();
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'idle-timers-test', log: silentLogger });
const topic = `${config.topicPrefix}.idle-timers`;

fileTopics(kafka, [{ topic, numPartitions: 1 }]);

describe('kafkajs idle connections', () => {
  it('schedule no timer while nothing is pending', async () => {
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({ topic, messages: [{ value: 'one' }] });
      // Every timer this process sets during one idle second, counted by the kafkajs file that sets it.
      const original = globalThis.setTimeout;
      const byFile = new Map<string, number>();
      globalThis.setTimeout = ((fn: () => void, ms?: number, ...rest: unknown[]) => {
        const file = /node_modules\/kafkajs\/(\S+?\.js)/.exec(new Error().stack ?? '')?.[1] ?? 'elsewhere';
        byFile.set(file, (byFile.get(file) ?? 0) + 1);
        return Reflect.apply(original, globalThis, [fn, ms, ...rest]) as ReturnType<typeof setTimeout>;
      }) as typeof setTimeout;
      try {
        await new Promise((resolve) => original(resolve, 1000));
      } finally {
        globalThis.setTimeout = original;
      }
      // Unpatched: hundreds from src/network/requestQueue/index.js.
      expect(byFile.get('src/network/requestQueue/index.js') ?? 0).toBeLessThan(20);
      // Still writes after the idle second.
      await producer.send({ topic, messages: [{ value: 'two' }] });
    } finally {
      await producer.disconnect();
    }
  });
});
