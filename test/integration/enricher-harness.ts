import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Consumer } from 'kafkajs';
import { createHealth } from '../../src/health.js';
import { startEnricher } from '../../src/enricher/enricher.js';
import type { ResourceReader } from '../../src/enricher/resource-reader.js';
import type { SnapshotRecord } from '../../src/wire/snapshot-record.js';
import { readDeadLetter, type StoredDeadLetter } from '../../src/wire/dead-letter.js';
import { startIngress, type RunningIngress } from '../../src/ingress/ingress.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { encodeFetchRequest } from '../../src/wire/fetch-request.js';
import { PIPELINE_PARTITIONS, topicNames } from '../../src/wire/topics.js';
import type { Running } from '../../src/lifecycle.js';
import { createLogger, type Logger } from '../../src/log.js';
import type { FetcherDeps } from '../../src/enricher/fetcher.js';
import { createMetrics } from '../../src/metrics.js';
import { createRegistry } from '../../src/registry/registry.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/simulator.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createBillingApiClient } from '../../src/billing-api/client.js';

export interface EnricherHarness {
  sim: Simulator;
  ingress: RunningIngress;
  config: ReturnType<typeof testConfig>;
  /** Snapshot records published so far (read-committed), in topic order per partition. */
  snapshots: SnapshotRecord[];
  /** DLQ records of the webhooks DLQ, decoded. */
  deadLetters: StoredDeadLetter[];
  /**
   * Resolves once the fetcher has processed every request written before the call: one
   * sentinel request per partition (ids picked with the producer's own partitioner), each
   * versioned only after everything ahead of it in its partition.
   */
  flushEnricher(): Promise<void>;
  /** The enricher instances' directory for their local head caches (ENRICHER_STATE_DIR), removed at stop. */
  stateDir: string;
  /** Starts one more enricher instance on the same groups (for ownership tests); `stateDir` instead of the harness's. */
  startEnricher(options?: { stateDir?: string }): Promise<Running>;
  /** Stops every enricher instance, then starts a new one: what survives is what is in Kafka and in its state directory. */
  restartEnricher(options?: { stateDir?: string }): Promise<void>;
  /** The Prometheus text of every enricher instance started so far. */
  metricsText(): Promise<string>;
  /** Stops every enricher instance started so far (the collector keeps reading). */
  stopEnrichers(): Promise<void>;
  versionsOf(type: string, id: string): SnapshotRecord[];
  stop(): Promise<void>;
}

/**
 * The real path into and through the enricher: the simulator delivers webhooks (spec 6.1) to a
 * real ingress, which writes them to Kafka; enricher instances fetch from the simulator's API;
 * a read-committed consumer collects what lands on the snapshot topic and the DLQ.
 */
export async function startEnricherHarness(
  options: { sim?: SimulatorOptions; reader?: (sim: Simulator, api: ResourceReader) => ResourceReader; env?: Record<string, string>; log?: Logger; fetcher?: Pick<FetcherDeps, 'sessionTimeoutMs'> } = {},
): Promise<EnricherHarness> {
  // Rereads of 404s on the scale of a test (production waits minutes and seconds).
  const stateDir = mkdtempSync(join(tmpdir(), 'enricher-state-'));
  const config = testConfig({ ENRICHER_NOT_FOUND_WINDOW_MS: '5000', ENRICHER_GONE_CONFIRM_MS: '1000', ENRICHER_STATE_DIR: stateDir, ...options.env });
  const log = options.log ?? createLogger(config.logLevel);
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'enricher-test', log });
  const registry = createRegistry(config.schemaRegistryUrl);
  // The escalation settings served, so a loader that reads what PaymentEscalated names finds it.
  const sim = await startSimulator({ seed: 7, rateLimit: { requestsPerSecond: 0 }, delivery: { retryBaseDelayMs: 100 }, escalationSettings: true, ...options.sim });
  const ingress = await startIngress({ log, kafka, registry, health: createHealth(), metrics: createMetrics() }, { ...config, ingressPort: 0, host: '127.0.0.1' });
  sim.setWebhookUrl(`${ingress.url}/webhooks`);
  const api = createBillingApiClient({
    ...sim.clientOptions(),
    requestsPerSecond: 500,
    maxConcurrency: 16,
    maxAttempts: 2,
    minBackoffMs: 50,
    maxBackoffMs: 200,
  });
  const reader = options.reader?.(sim, api) ?? api;
  const enrichers: Running[] = [];
  const registries: ReturnType<typeof createMetrics>[] = [];
  const startOne = async (instance: { stateDir?: string } = {}) => {
    const metrics = createMetrics();
    registries.push(metrics);
    const e = await startEnricher({ kafka, registry, reader, log, metrics, health: createHealth() }, { ...config, enricherStateDir: instance.stateDir ?? config.enricherStateDir }, { maxPauseMs: 1000, ...options.fetcher });
    enrichers.push(e);
    return e;
  };
  await startOne();

  const names = topicNames(config.topicPrefix);
  const snapshots: SnapshotRecord[] = [];
  const deadLetters: StoredDeadLetter[] = [];
  const collector: Consumer = kafka.consumer({ groupId: `collector-${uniqueSuffix()}`, readUncommitted: false });
  await collector.connect();
  await collector.subscribe({ topics: [names.snapshots, names.webhooksDlq], fromBeginning: true });
  await collector.run({
    eachMessage: async ({ topic, partition, message }) => {
      if (topic === names.snapshots) snapshots.push((await registry.decode(message.value as Buffer)) as SnapshotRecord);
      else deadLetters.push(await readDeadLetter({ topic, partition, offset: message.offset }, message, (v) => registry.decode(v)));
    },
  });

  const flushEnricher = async () => {
    const topic = enricherTopics(config.topicPrefix).requests;
    const partitioner = defaultPartitioner();
    const partitionMetadata = Array.from({ length: PIPELINE_PARTITIONS }, (_, partition) => ({ partitionId: partition, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
    const run = uniqueSuffix();
    const sentinels = new Map<number, string>();
    for (let i = 0; sentinels.size < PIPELINE_PARTITIONS; i++) {
      const id = `sentinel-${run}-${i}`;
      const partition = partitioner({ topic, partitionMetadata, message: { key: `Contract:${id}`, value: null } });
      if (!sentinels.has(partition)) sentinels.set(partition, id);
    }
    const producer = kafka.producer({ createPartitioner: defaultPartitioner });
    await producer.connect();
    const now = Date.now();
    await producer.send({
      topic,
      acks: -1,
      messages: [...sentinels.values()].map((id) => encodeFetchRequest({ type: 'Contract', id, eventId: null, event: null, receivedAt: now, source: null, prefetched: { body: JSON.stringify({ Id: id }), fetchedAt: now } })),
    });
    await producer.disconnect();
    await waitFor(() => [...sentinels.values()].every((id) => snapshots.some((s) => s.resource_id === id)), { timeoutMs: 60_000, what: 'enricher flushed' });
  };

  return {
    sim,
    ingress,
    flushEnricher,
    config,
    snapshots,
    deadLetters,
    stateDir,
    startEnricher: startOne,
    async restartEnricher(instance) {
      await Promise.all(enrichers.splice(0).map((e) => e.stop()));
      await startOne(instance);
    },
    metricsText: async () => (await Promise.all(registries.map((r) => r.metrics()))).join('\n'),
    async stopEnrichers() {
      await Promise.all(enrichers.splice(0).map((e) => e.stop()));
    },
    versionsOf: (type, id) => snapshots.filter((s) => s.resource_type === type && s.resource_id === id).sort((a, b) => a.version - b.version),
    async stop() {
      await sim.stop();
      await Promise.allSettled(enrichers.map((e) => e.stop()));
      await ingress.stop();
      await collector.disconnect();
      await api.close();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** `count` ids `<prefix>-<n>` whose key `<type>:<id>` the producers' partitioner puts on `partition` of the enricher's topics. */
export function idsOnPartition(type: string, prefix: string, count: number, partition: number): string[] {
  const partitioner = defaultPartitioner();
  const partitionMetadata = Array.from({ length: PIPELINE_PARTITIONS }, (_, p) => ({ partitionId: p, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    const id = `${prefix}-${i}`;
    if (partitioner({ topic: 'any', partitionMetadata, message: { key: `${type}:${id}`, value: null } }) === partition) ids.push(id);
  }
  return ids;
}
