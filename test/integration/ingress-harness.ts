import type { Kafka } from 'kafkajs';
import type { Config } from '../../src/config.js';
import { createHealth, type Health } from '../../src/health.js';
import { startIngress, type IngressConfig, type RunningIngress } from '../../src/ingress/ingress.js';
import type { WebhookRecord } from '../../src/wire/webhook-record.js';
import { createKafka } from '../../src/kafka/client.js';
import { topicNames } from '../../src/wire/topics.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { startStageWatch, type WatchdogSettings } from '../../src/watch/stall-watchdog.js';
import { createWatchMetrics } from '../../src/watch/watch-metrics.js';
import { createRegistry, type Registry } from '../../src/registry/registry.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';

/** One record of the webhooks topic, decoded, with where it sits. */
export interface StoredWebhook {
  key: string;
  partition: number;
  offset: string;
  value: WebhookRecord;
}

export interface TestIngress {
  config: Config;
  topic: string;
  kafka: Kafka;
  registry: Registry;
  health: Health;
  metrics: ReturnType<typeof createMetrics>;
  ingress: RunningIngress;
  /** POSTs `body` (a string is sent as is; anything else as JSON) to `path` (default /webhooks). */
  post(body: unknown, options?: { path?: string; contentType?: string | null }): Promise<{ status: number; body: { event_id?: string; error?: string } }>;
  /** Records in the topic right now, from the high watermarks: exact, since a 2xx follows the ack. */
  recordCount(): Promise<number>;
  /** Every record in the topic, decoded (waits until the consumer has read up to the watermarks). */
  readAll(): Promise<StoredWebhook[]>;
  stop(): Promise<void>;
}

/** An ingress on a free loopback port, against the real test Kafka and registry, with its own topics. */
export async function startTestIngress(tuning: Partial<IngressConfig> = {}, env: Record<string, string> = {}, options: { quiet?: boolean; watch?: WatchdogSettings } = {}): Promise<TestIngress> {
  const config = testConfig(env);
  // The token is a secret, so non-enumerable in Config: a spread leaves it out unless named.
  // quiet: for tests that break Kafka on purpose, where kafkajs's connection errors are expected noise.
  const log = options.quiet ? silentLogger : createLogger(config.logLevel);
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-ingress', log });
  const registry = createRegistry(config.schemaRegistryUrl);
  const health = createHealth();
  const metrics = createMetrics();
  // watch: the ingress under a stall watchdog of these settings (stopped with the ingress).
  const watch = options.watch ? startStageWatch({ log, health, metrics: createWatchMetrics(metrics), settings: options.watch }) : undefined;
  const ingress = await startIngress({ log, kafka, registry, health, metrics, ...(watch ? { watch } : {}) }, { ...config, ingressTokens: config.ingressTokens, ingressPort: 0, host: '127.0.0.1', ...tuning });
  const topic = topicNames(config.topicPrefix).webhooks;
  let stopped = false;

  const recordCount = async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    } finally {
      await admin.disconnect();
    }
  };

  return {
    config,
    topic,
    kafka,
    registry,
    health,
    metrics,
    ingress,
    async post(body, options = {}) {
      const headers: Record<string, string> = {};
      if (options.contentType !== null) headers['content-type'] = options.contentType ?? 'application/json';
      const res = await fetch(`${ingress.url}${options.path ?? '/webhooks'}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as { event_id?: string; error?: string } };
    },
    recordCount,
    async readAll() {
      const expected = await recordCount();
      const consumer = kafka.consumer({ groupId: `test-ingress-${uniqueSuffix()}` });
      const records: StoredWebhook[] = [];
      await consumer.connect();
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ partition, message }) => {
            records.push({ key: String(message.key), partition, offset: message.offset, value: (await registry.decode(message.value as Buffer)) as WebhookRecord });
          },
        });
        await waitFor(() => records.length >= expected, { what: `${expected} records consumed`, timeoutMs: 30_000 });
      } finally {
        await consumer.disconnect();
      }
      return records;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      watch?.stop();
      await ingress.stop();
    },
  };
}

