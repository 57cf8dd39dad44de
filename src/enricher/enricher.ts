import type { Kafka } from 'kafkajs';
import type { Registry as MetricsRegistry } from 'prom-client';
import type { Config } from '../config.js';
import type { Health } from '../health.js';
import { assertCoPartitioned, assertCommittedOffsetsInRange, assertKeysInPlace, warnIfLogExpires } from '../kafka/topic-checks.js';
import { ensureTopics } from '../kafka/topics.js';
import { pipelineTopicSpecs, topicNames } from '../wire/topics.js';
import type { Running } from '../lifecycle.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { SNAPSHOT_SCHEMA_FILE, valueSubject } from '../wire/schemas.js';
import { createEnricherMetrics } from './enricher-metrics.js';
import { enricherTopicSpecs, enricherTopics } from '../wire/topics.js';
import { startDelayForwarder } from './delay-forwarder.js';
import { startFetcher, type FetcherDeps } from './fetcher.js';
import type { ResourceReader } from './resource-reader.js';
import { startRouter } from './router.js';
import type { StageWatch } from '../watch/stall-watchdog.js';

export interface EnricherDeps {
  kafka: Kafka;
  registry: Registry;
  reader: ResourceReader;
  log: Logger;
  metrics: MetricsRegistry;
  health: Health;
  /** The process's stall watchdog; its router, fetcher and delay forwarder report to it. */
  watch?: StageWatch;
}

/** Consumer group of the router: reads `<prefix>.webhooks`; the group `replay --group enricher` moves. */
export const enricherGroupId = (prefix: string) => `${prefix}.enricher`;
/** Consumer group of the fetcher: reads the internal request topic. */
export const fetcherGroupId = (prefix: string) => `${prefix}.enricher.fetcher`;
/** Consumer group of the delay forwarder: reads the internal delay topic. */
export const delayForwarderGroupId = (prefix: string) => `${prefix}.enricher.delayed`;

/**
 * The enricher: webhooks → (router) → fetch requests keyed by resource → (fetcher) → versioned
 * snapshots. See docs/ARCHITECTURE.md for why it is split in two and how each resource gets
 * exactly one writer.
 */
export async function startEnricher(deps: EnricherDeps, config: Pick<Config, 'topicPrefix' | 'enricherCoalesceMs' | 'enricherNotFoundWindowMs' | 'enricherGoneConfirmMs' | 'enricherUnreadableAttempts' | 'enricherStateDir' | 'topicPartitions' | 'billingPathPaymentEscalationProcess' | 'enricherEscalationSettingsIntervalMs' | 'enricherHangingTransactionMs'>, options: Pick<FetcherDeps, 'maxPauseMs' | 'sessionTimeoutMs'> = {}): Promise<Running> {
  const log = deps.log.child({ component: 'enricher' });
  const topics = topicNames(config.topicPrefix);
  const internal = enricherTopics(config.topicPrefix);
  const admin = deps.kafka.admin();
  await admin.connect();
  const specs = pipelineTopicSpecs(topics, config.topicPartitions);
  let requestPartitions = 0;
  try {
    await ensureTopics(admin, [specs.webhooks, specs.snapshots, specs.webhooksDlq, ...enricherTopicSpecs(internal, config.topicPartitions)]);
    await warnIfLogExpires(admin, [topics.webhooks, topics.snapshots], log);
    // The router reads the source of truth; the fetcher's requests are derived and re-created by replaying webhooks.
    await assertCommittedOffsetsInRange(admin, enricherGroupId(config.topicPrefix), [topics.webhooks], 'billing-loader replay --group enricher --to-beginning');
    // The fetcher finds a resource's head in the heads partition numbered like its request partition.
    await assertCoPartitioned(admin, [internal.requests, internal.heads], (count) => `billing-loader repartition --partitions ${count}`);
    await assertKeysInPlace(deps.kafka, admin, internal.heads, 'billing-loader repartition');
    const metadata = await admin.fetchTopicMetadata({ topics: [internal.requests] });
    requestPartitions = metadata.topics[0]?.partitions.length ?? 0;
  } catch (err) {
    await admin.disconnect();
    throw err;
  }
  const snapshotSchemaId = await deps.registry.registerFile(valueSubject(topics.snapshots), SNAPSHOT_SCHEMA_FILE);
  const metrics = createEnricherMetrics(deps.metrics);
  // The id a PaymentEscalated names is the legal entity's escalation settings, for which the
  // service documents no path: read only where the operator configured one (docs/ARCHITECTURE.md).
  const escalationSettings = { read: config.billingPathPaymentEscalationProcess !== undefined, intervalMs: config.enricherEscalationSettingsIntervalMs };
  deps.health.addCheck('enricher.kafka', async () => void (await admin.describeCluster()));
  deps.health.addCheck('enricher.schema-registry', () => deps.registry.ping());

  const fetcher = await startFetcher({
    ...deps,
    log,
    metrics,
    topics,
    internal,
    groupId: fetcherGroupId(config.topicPrefix),
    snapshotSchemaId,
    coalesceMs: config.enricherCoalesceMs,
    stateDir: config.enricherStateDir,
    retryRules: { notFoundWindowMs: config.enricherNotFoundWindowMs, goneConfirmMs: config.enricherGoneConfirmMs, unreadableAttempts: config.enricherUnreadableAttempts },
    escalationSettings,
    requestPartitions,
    hangingTransactionMs: config.enricherHangingTransactionMs,
    ...options,
  });
  const forwarder = await startDelayForwarder({ ...deps, log, metrics, internal, groupId: delayForwarderGroupId(config.topicPrefix) });
  const router = await startRouter({ ...deps, log, metrics, topics, internal, groupId: enricherGroupId(config.topicPrefix), readEscalationSettings: escalationSettings.read });
  log.info('enricher started', { webhooks: topics.webhooks, snapshots: topics.snapshots });
  return {
    async stop() {
      deps.health.setCondition('shutdown', 'stopping');
      // Router first: no new requests; the forwarder next (no more rereads); then the fetcher finishes its in-flight batches.
      await router.stop();
      await forwarder.stop();
      await fetcher.stop();
      await admin.disconnect();
    },
  };
}
