import type { EachBatchPayload, Kafka, KafkaMessage, Producer } from 'kafkajs';
import { LoaderError, errorMessage } from '../errors.js';
import type { Health } from '../health.js';
import { createIdempotentProducer } from '../kafka/producers.js';
import { startSupervisedConsumer, type SupervisedConsumer } from '../kafka/supervised-consumer.js';
import type { Logger } from '../log.js';
import type { EnricherMetrics } from './enricher-metrics.js';
import type { EnricherTopics } from '../wire/topics.js';
import { decodeFetchRequest } from '../wire/fetch-request.js';
import type { StageWatch } from '../watch/stall-watchdog.js';
import { watchConsumerStage } from '../watch/consumer-stage-watch.js';
import { GROUP_TIMEOUTS } from '../kafka/group-timeouts.js';

export interface DelayForwarderDeps {
  kafka: Kafka;
  log: Logger;
  metrics: EnricherMetrics;
  health: Health;
  internal: EnricherTopics;
  groupId: string;
  now?: () => number;
  /** The process's stall watchdog: lag gauges, stall gauge, restarts. */
  watch?: StageWatch;
}

/** When a delayed record is due; one that cannot be decoded is due at once (the fetcher dead-letters it). */
export function dueAt(message: Pick<KafkaMessage, 'value'>): number {
  try {
    return decodeFetchRequest(message.value).retry?.dueAt ?? 0;
  } catch {
    return 0;
  }
}

/**
 * Writes each record of the delay topic back to the request topic once it is due. The fetcher
 * writes a delayed request in its batch transaction (with its offsets), so a reread survives a
 * crash, and waiting here holds up no other resource of the request partition. A partition
 * waits for its first record that is not due: it is paused, with a timer that resumes it, never
 * a sleep inside eachBatch (which would outlast the session timeout). Records behind it wait
 * too, at most the longest retry delay. At least once: a record forwarded twice is read twice,
 * and the second read coalesces or finds the content unchanged.
 */
export async function startDelayForwarder(deps: DelayForwarderDeps): Promise<{ stop(): Promise<void> }> {
  const { kafka, log } = deps;
  const now = deps.now ?? Date.now;
  const timers = new Set<NodeJS.Timeout>();
  const newProducer = (): Producer => createIdempotentProducer(kafka);
  let producer = newProducer();
  await producer.connect();
  let producerReady = true;

  const supervisor: { running?: SupervisedConsumer } = {};
  const handleBatch = async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat, isRunning, isStale, pause }: EachBatchPayload) => {
    const due: KafkaMessage[] = [];
    let waitUntil: number | undefined;
    for (const message of batch.messages) {
      const at = dueAt(message);
      if (at > now()) {
        waitUntil = at;
        break;
      }
      due.push(message);
    }
    if (!isRunning() || isStale()) return;
    if (due.length > 0) {
      try {
        if (!producerReady) {
          await producer.connect();
          producerReady = true;
        }
        await producer.send({ topic: deps.internal.requests, acks: -1, messages: due.map((m) => ({ key: m.key, value: m.value })) });
      } catch (err) {
        const old = producer;
        producer = newProducer();
        producerReady = false;
        await old.disconnect().catch(() => undefined);
        throw new LoaderError(`delayed requests not forwarded, batch will be read again: ${errorMessage(err)}`, { retriable: true, context: { topic: batch.topic, partition: batch.partition } });
      }
      deps.metrics.forwarded.inc(due.length);
      // The fetcher writes transactionally: after the batch's last record may come a commit
      // marker, which batch.lastOffset() covers; committing only past the record would leave
      // the group one behind forever.
      const last = waitUntil === undefined ? batch.lastOffset() : (due.at(-1) as KafkaMessage).offset;
      // Committed, then resolved: kafkajs retries a failed batch in place from its last resolved
      // offset, so a batch resolved before a commit that failed (a coordinator loading after a
      // broker restart) was never read or committed again, and its group stayed behind for good.
      // Unresolved, it is read and forwarded again (at least once) and its commit retried.
      await commitOffsetsIfNecessary({ topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }] }] });
      resolveOffset(last);
    }
    if (waitUntil === undefined) {
      await heartbeat();
      return;
    }
    // The first record not yet due is read again when the partition resumes.
    const notDue = batch.messages[due.length] as KafkaMessage;
    supervisor.running?.current().seek({ topic: batch.topic, partition: batch.partition, offset: notDue.offset });
    const resume = pause();
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        try {
          resume();
        } catch (err) {
          // Its consumer stopped or was replaced meanwhile: the successor starts with nothing paused.
          log.debug('delayed partition not resumed: its consumer is gone', { partition: batch.partition, err: errorMessage(err) });
        }
      },
      Math.max(0, waitUntil - now()),
    );
    timer.unref();
    timers.add(timer);
  };

  // A partition waiting for a reread that is not due is paused: the watch does not count it as stalled.
  const watched = watchConsumerStage(deps.watch, {
    stage: 'delay-forwarder',
    kafka,
    groupId: deps.groupId,
    async restart() {
      const old = producer;
      producer = newProducer();
      producerReady = false;
      await old.disconnect().catch(() => undefined);
      await supervisor.running?.restart();
    },
  });
  supervisor.running = await startSupervisedConsumer({
    name: 'enricher.delay-forwarder',
    // A resumed partition joins the next fetch only: a short fetch wait keeps a reread close to its
    // due time on an otherwise idle topic (kafkajs waits up to 5 s by default).
    create: () => watched.attach(kafka.consumer({ groupId: deps.groupId, readUncommitted: false, ...GROUP_TIMEOUTS, maxWaitTimeInMs: 500 })),
    async start(c) {
      await c.connect();
      await c.subscribe({ topic: deps.internal.delayed, fromBeginning: true });
      await c.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 3, eachBatch: handleBatch });
    },
    log,
    health: deps.health,
  });

  return {
    async stop() {
      await watched.stop();
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await supervisor.running?.stop();
      await producer.disconnect();
    },
  };
}
