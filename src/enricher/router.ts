import type { EachBatchPayload, Kafka, Producer } from 'kafkajs';
import { resourceKey } from '../billing-api/resource-types.js';
import { LoaderError, UnknownSchemaIdError, classifyRegistryError, errorMessage, unknownSchemaId } from '../errors.js';
import { createIdempotentProducer } from '../kafka/producers.js';
import type { TopicNames } from '../wire/topics.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { createCommitThrottle } from '../kafka/commit-throttle.js';
import { createDeadLetterWriter } from '../kafka/dead-letters.js';
import { readMessageLimits } from '../kafka/message-limits.js';
import { deadLetterFor, type DeadLetter } from '../wire/dead-letter.js';
import { startSupervisedConsumer, type SupervisedConsumer } from '../kafka/supervised-consumer.js';
import { guardOffsets } from '../kafka/offset-guard.js';
import type { Health } from '../health.js';
import type { EnricherMetrics } from './enricher-metrics.js';
import { CATALOG_EVENTS, KNOWN_EVENTS, resourcesOf } from './event-resources.js';
import { encodeFetchRequest, type FetchRequest } from '../wire/fetch-request.js';
import type { EnricherTopics } from '../wire/topics.js';
import type { WebhookRecord } from '../wire/webhook-record.js';
import type { StageWatch } from '../watch/stall-watchdog.js';
import { watchConsumerStage } from '../watch/consumer-stage-watch.js';
import { GROUP_TIMEOUTS } from '../kafka/group-timeouts.js';

export interface RouterDeps {
  kafka: Kafka;
  registry: Registry;
  log: Logger;
  metrics: EnricherMetrics;
  topics: TopicNames;
  internal: EnricherTopics;
  groupId: string;
  health: Health;
  /** The process's stall watchdog: lag gauges, stall gauge, restarts. */
  watch?: StageWatch;
  /** Route PaymentEscalationProcess ids to a read (only with BILLING_PATH_PAYMENT_ESCALATION_PROCESS set). Default false. */
  readEscalationSettings?: boolean;
}

/**
 * Turns each webhook into one fetch request per resource it refers to, re-keyed by resource.
 * At least once: the requests (and any dead letters) are acknowledged by all in-sync replicas
 * before the webhook offsets are committed, so a crash repeats requests (they coalesce) and
 * never loses one. A record that cannot be decoded goes to the webhooks DLQ.
 */
/**
 * The broker holds each fetch of the webhooks topic until ROUTER_MIN_BYTES are there (a few
 * hundred webhooks) or ROUTER_WAIT_MS have passed. Without it every fetch returns as soon as one
 * produce request of the ingress lands, and each returned batch costs the router a produce
 * request and its bookkeeping, however few webhooks it holds.
 */
const ROUTER_MIN_BYTES = 64 * 1024;

/** Readiness condition set while webhooks cannot be decoded for want of the registry (cleared by the next routed batch). */
export const DECODE_CONDITION = 'enricher.webhook-decode';
const ROUTER_WAIT_MS = 20;

export async function startRouter(deps: RouterDeps): Promise<{ stop(): Promise<void> }> {
  const newProducer = (): Producer => createIdempotentProducer(deps.kafka);
  const limitOf = await readMessageLimits(deps.kafka, [deps.topics.webhooksDlq]);
  let producer = newProducer();
  let deadLetters = createDeadLetterWriter(producer, 'enricher', limitOf);
  let producerReady = false;
  await producer.connect();
  producerReady = true;
  // kafkajs rolls an idempotent producer's sequence numbers back after a failed send; after a
  // broker restart the broker can then refuse every later send (OUT_OF_ORDER_SEQUENCE_NUMBER,
  // not retriable), the consumer crashes without restarting, and the router stops for good while
  // the process looks healthy (found by test/faults/broker-restart.test.ts). As in the ingress:
  // a failed send replaces the producer (a new producer id), and the batch fails with a
  // retriable error so kafkajs restarts the consumer from the committed offsets.
  const replaceProducer = async () => {
    const old = producer;
    producer = newProducer();
    deadLetters = createDeadLetterWriter(producer, 'enricher', limitOf);
    producerReady = false;
    await old.disconnect().catch(() => undefined);
  };
  const commits = createCommitThrottle(deps.log);
  // Partitions held for want of the registry, with why: not ready until every one is routed again.
  const held = new Map<number, string>();
  const handleBatch = async (payload: EachBatchPayload) => {
    const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
    const requests: { key: string; value: Buffer }[] = [];
    const letters: DeadLetter[] = [];
    for (const message of batch.messages) {
      let record: WebhookRecord;
      try {
        record = (await deps.registry.decode(message.value as Buffer)) as WebhookRecord;
      } catch (err) {
        const failure = classifyRegistryError(err, message.value);
        // No `cause`: kafkajs decides on a restart from the root cause's own retriable flag, and the
        // registry client's errors carry none. Both hold the batch: an unreachable registry, or one
        // that does not know a well-framed record's schema id (a wrong SCHEMA_REGISTRY_URL), is no
        // fault of the webhooks, and dead-lettering them would lose them.
        if (failure !== 'bad-record') {
          const where = { topic: batch.topic, partition: batch.partition, offset: message.offset };
          if (failure === 'configuration') {
            const unknown = new UnknownSchemaIdError(unknownSchemaId(err, message.value as Buffer) ?? (message.value as Buffer).readInt32BE(1), err, where);
            held.set(batch.partition, unknown.message);
            deps.health.setCondition(DECODE_CONDITION, unknown.message);
            deps.log.error('schema registry does not know the schema id of a webhook, holding the batch', { ...where, schemaId: unknown.schemaId, err: errorMessage(err) });
            throw new LoaderError(`${unknown.message}; the batch will be read again`, { retriable: true, context: where });
          }
          held.set(batch.partition, `schema registry unavailable while decoding webhooks: ${errorMessage(err)}`);
          deps.health.setCondition(DECODE_CONDITION, held.get(batch.partition));
          throw new LoaderError(`schema registry unavailable while decoding webhooks, batch will be read again: ${errorMessage(err)}`, { retriable: true, context: where });
        }
        letters.push(deadLetterFor(deps.topics.webhooksDlq, batch.topic, batch.partition, message, 'decode', err instanceof Error ? err.message : String(err)));
        continue;
      }
      const refs = resourcesOf(record).filter((r) => deps.readEscalationSettings === true || r.type !== 'PaymentEscalationProcess');
      deps.metrics.webhooksRouted.inc({ event: KNOWN_EVENTS.includes(record.event) || CATALOG_EVENTS.includes(record.event) ? record.event : 'unknown' });
      const keys = refs.map((r) => resourceKey(r.type, r.id));
      for (const ref of refs) {
        const own = resourceKey(ref.type, ref.id);
        const request: FetchRequest = {
          ...ref,
          eventId: record.event_id,
          event: record.event,
          receivedAt: record.received_at,
          source: { topic: batch.topic, partition: batch.partition, offset: message.offset },
          ...(keys.length > 1 ? { siblings: keys.filter((k) => k !== own) } : {}),
        };
        requests.push(encodeFetchRequest(request));
      }
    }
    if (!isRunning() || isStale()) return;
    try {
      if (!producerReady) {
        await producer.connect();
        producerReady = true;
      }
      if (requests.length > 0) await producer.send({ topic: deps.internal.requests, acks: -1, messages: requests });
      if (letters.length > 0) await deadLetters.send(letters);
    } catch (err) {
      await replaceProducer();
      // No `cause`: kafkajs decides on a restart from the root cause's own retriable flag.
      throw new LoaderError(`fetch requests not written, batch will be read again: ${errorMessage(err)}`, { retriable: true, context: { topic: batch.topic, partition: batch.partition } });
    }
    if (held.delete(batch.partition)) deps.health.setCondition(DECODE_CONDITION, held.values().next().value);
    deps.metrics.deadLettered(letters);
    resolveOffset(batch.lastOffset());
    await commits.commit(payload);
    await heartbeat();
  };

  const admin = deps.kafka.admin();
  await admin.connect();
  const supervised: { running?: SupervisedConsumer } = {};
  const watched = watchConsumerStage(deps.watch, {
    stage: 'router',
    kafka: deps.kafka,
    groupId: deps.groupId,
    async restart() {
      await replaceProducer();
      await supervised.running?.restart();
    },
  });
  const consumer = await startSupervisedConsumer({
    name: 'enricher.router',
    create: () => watched.attach(deps.kafka.consumer({ groupId: deps.groupId, ...GROUP_TIMEOUTS, minBytes: ROUTER_MIN_BYTES, maxWaitTimeInMs: ROUTER_WAIT_MS })),
    async start(c) {
      await c.connect();
      await c.subscribe({ topic: deps.topics.webhooks, fromBeginning: true });
      const eachBatch = guardOffsets(c, admin, deps.groupId, 'billing-loader replay --group enricher --to-beginning', handleBatch);
      await c.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 3, eachBatch });
    },
    log: deps.log,
    health: deps.health,
  });
  supervised.running = consumer;
  return {
    async stop() {
      await watched.stop();
      await commits.flush();
      await consumer.stop();
      await producer.disconnect();
      await admin.disconnect();
    },
  };
}
