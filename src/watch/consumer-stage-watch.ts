import type { Consumer, Kafka } from 'kafkajs';
import { createGroupLag } from './group-lag.js';
import type { StageWatch } from './stall-watchdog.js';

export interface ConsumerStageWatch {
  /** Follows a consumer instance's assignment; wrap each instance the stage creates. Returns it. */
  attach(consumer: Consumer): Consumer;
  /** Stops watching: the stage's gauges go. */
  stop(): Promise<void>;
}

/**
 * Puts a stage that reads one consumer group under the stage watch: its lag gauges, its stall
 * gauge and the watchdog's restart. Without a watch (a stage started alone in a test) it does
 * nothing.
 */
export function watchConsumerStage(
  watch: StageWatch | undefined,
  options: { stage: string; kafka: Kafka; groupId: string; restart: () => Promise<void> },
): ConsumerStageWatch {
  if (!watch) return { attach: (c) => c, stop: () => Promise.resolve() };
  const lag = createGroupLag({ kafka: options.kafka, groupId: options.groupId, stage: options.stage, metrics: watch.metrics });
  const unwatch = watch.watch({
    stage: options.stage,
    async sample() {
      const s = await lag.sample();
      const waiting = s.partitions.filter((p) => p.lag > 0).map((p) => ({ topic: p.topic, partition: p.partition, committed: p.committed, end: p.end, ...(p.paused ? { paused: true } : {}) }));
      return { lag: s.lag, progressed: s.progressed, waitingFor: { group: options.groupId, partitions: waiting } };
    },
    restart: options.restart,
  });
  return {
    attach: (c) => lag.attach(c),
    async stop() {
      unwatch();
      await lag.close();
    },
  };
}
