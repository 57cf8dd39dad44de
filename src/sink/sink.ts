import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import type { Registry as MetricsRegistry } from 'prom-client';
import type { Config } from '../config.js';
import { createPool } from '../db/pool.js';
import type { Health } from '../health.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { createIdempotentProducer } from '../kafka/producers.js';
import { assertCommittedOffsetsInRange, warnIfLogExpires } from '../kafka/topic-checks.js';
import { ensureTopics } from '../kafka/topics.js';
import { pipelineTopicSpecs, topicNames } from '../wire/topics.js';
import type { Running } from '../lifecycle.js';
import type { Logger } from '../log.js';
import { createRegistry, type Registry } from '../registry/registry.js';
import { createBatchHandler } from './batch-handler.js';
import { createCommitThrottle } from '../kafka/commit-throttle.js';
import { createDeadLetterWriter } from '../kafka/dead-letters.js';
import { readMessageLimits } from '../kafka/message-limits.js';
import { createRenewingProducer } from '../kafka/renewing-producer.js';
import { startSupervisedConsumer, type SupervisedConsumer } from '../kafka/supervised-consumer.js';
import { guardOffsets } from '../kafka/offset-guard.js';
import { createSinkMetrics } from './sink-metrics.js';
import { startDeadLetterRecorder } from './dead-letter-recorder.js';
import { startMetricRefresher } from './metric-refresher.js';
import type { StageWatch } from '../watch/stall-watchdog.js';
import { watchConsumerStage } from '../watch/consumer-stage-watch.js';
import { GROUP_TIMEOUTS } from '../kafka/group-timeouts.js';

export interface SinkDeps {
  log: Logger;
  metrics: MetricsRegistry;
  health: Health;
  /** Shared clients (the `run` command); built from the configuration when absent, and then closed by stop(). */
  kafka?: Kafka;
  registry?: Registry;
  pool?: pg.Pool;
  /** The process's stall watchdog: lag gauges, stall gauge, restarts. */
  watch?: StageWatch;
}

export interface SinkOptions {
  /** Consumer group. Default: SINK_GROUP_ID, else `<TOPIC_PREFIX>.sink`. */
  groupId?: string;
  /** Partitions whose batches are written at the same time (one transaction each). Default 3. */
  partitionsConsumedConcurrently?: number;
  /** Bytes fetched per partition per request, i.e. the batch size, in bytes. Default 4 MiB. */
  maxBytesPerPartition?: number;
}

/** The sink's consumer group for a configuration. */
export function sinkGroupId(config: Config): string {
  return config.sinkGroupId ?? `${config.topicPrefix}.sink`;
}

/**
 * The sink stage: consumes `<prefix>.snapshots` and `<prefix>.webhooks` and appends them to the
 * warehouse in DATABASE_SCHEMA (migrated beforehand by `billing-loader migrate`). One transaction
 * per Kafka batch; offsets committed after the COMMIT, at most once a second (at-least-once
 * delivery, made exactly-once in the warehouse by idempotent writes). Records that cannot be
 * decoded or are refused go to the DLQ matching their topic; every letter of both DLQs, whoever
 * wrote it, is recorded in the warehouse's dead_letters (dead-letter-recorder.ts). stop() commits the pending offsets,
 * finishes the batch in flight, commits it, and closes.
 */
export async function startSink(deps: SinkDeps, config: Config, options: SinkOptions = {}): Promise<Running> {
  const log = deps.log.child({ component: 'sink' });
  const names = topicNames(config.topicPrefix);
  const groupId = options.groupId ?? sinkGroupId(config);
  const concurrency = options.partitionsConsumedConcurrently ?? 3;
  const kafka = deps.kafka ?? createKafka({ ...kafkaConnection(config), clientId: 'billing-loader-sink', log });
  const registry = deps.registry ?? createRegistry(config);
  const pool = deps.pool ?? createPool({ databaseUrl: config.databaseUrl, applicationName: 'billing-loader sink', log, max: concurrency + 2 });
  const metrics = createSinkMetrics(deps.metrics);
  const stopping = new AbortController();

  deps.health.addCheck('sink.database', async () => {
    await pool.query('SELECT 1');
  });
  deps.health.addCheck('sink.schema-registry', () => registry.ping());
  deps.health.setCondition('sink-consumer', 'joining the consumer group');

  const replayFix = `billing-loader replay --group sink${groupId === sinkGroupId(config) ? '' : ` --group-id ${groupId}`} --to-beginning`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, Object.values(pipelineTopicSpecs(names, config.topicPartitions)));
    await warnIfLogExpires(admin, [names.snapshots, names.webhooks], log);
    await assertCommittedOffsetsInRange(admin, groupId, [names.snapshots, names.webhooks], replayFix);
  } catch (err) {
    await admin.disconnect();
    throw err;
  }

  const limitOf = await readMessageLimits(kafka, [names.snapshotsDlq, names.webhooksDlq]);
  // The batch handler retries a failed dead-letter send; each retry needs a producer the broker still accepts.
  const producer = createRenewingProducer(() => createIdempotentProducer(kafka));
  const commits = createCommitThrottle(log);
  const eachBatch = createBatchHandler({
    pool,
    commits,
    registry,
    deadLetters: createDeadLetterWriter(producer, 'sink', limitOf),
    schema: config.databaseSchema,
    names,
    metrics,
    health: deps.health,
    log,
    stopping: stopping.signal,
  });
  const supervised: { running?: SupervisedConsumer } = {};
  const watched = watchConsumerStage(deps.watch, {
    stage: 'sink',
    kafka,
    groupId,
    async restart() {
      // A disconnected renewing producer connects a new one at its next send.
      await producer.disconnect().catch(() => undefined);
      await supervised.running?.restart();
    },
  });
  const consumer = await startSupervisedConsumer({
    name: 'sink-consumer',
    create: () =>
      watched.attach(kafka.consumer({
        groupId,
        maxBytesPerPartition: options.maxBytesPerPartition ?? 4 * 1024 * 1024,
        maxBytes: 32 * 1024 * 1024,
        maxWaitTimeInMs: 500,
        ...GROUP_TIMEOUTS,
        // The enricher publishes snapshots in Kafka transactions: never read an aborted one.
        readUncommitted: false,
      })),
    async start(c) {
      c.on(c.events.CRASH, ({ payload }) => log.error('sink consumer crashed', { err: payload.error, restart: payload.restart }));
      await c.connect();
      await c.subscribe({ topics: [names.snapshots, names.webhooks], fromBeginning: true });
      await c.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: concurrency, eachBatch: guardOffsets(c, admin, groupId, replayFix, eachBatch) });
    },
    log,
    health: deps.health,
  });
  supervised.running = consumer;
  const deadLetterRecorder = await startDeadLetterRecorder({ kafka, registry, pool, schema: config.databaseSchema, topics: [names.webhooksDlq, names.snapshotsDlq], groupId: `${groupId}.dead-letters`, log, health: deps.health });
  const refresher = config.sinkMetricsRefreshMs > 0 ? startMetricRefresher({ pool, schema: config.databaseSchema, intervalMs: config.sinkMetricsRefreshMs, metrics, log }) : undefined;
  log.info('sink started', { groupId, topics: [names.snapshots, names.webhooks], schema: config.databaseSchema });

  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        deps.health.setCondition('sink-consumer', 'stopping');
        stopping.abort();
        await watched.stop();
        await commits.flush();
        // stop() waits for the batch in flight, which commits at once when the consumer stops.
        await consumer.stop();
        await deadLetterRecorder.stop();
        await refresher?.stop();
        await producer.disconnect();
        await admin.disconnect();
        if (!deps.pool) await pool.end();
        log.info('sink stopped', { groupId });
      })();
      return stopped;
    },
  };
}
