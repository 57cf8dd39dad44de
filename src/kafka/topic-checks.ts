import type { Admin, Kafka } from 'kafkajs';
import { LoaderError } from '../errors.js';
import type { Logger } from '../log.js';
import { retry } from '../retry.js';
import { defaultPartitioner } from './client.js';
import { readToEnd } from './read-to-end.js';
import { KEEP_FOREVER } from '../wire/topics.js';

/**
 * Warns, once per topic and setting, when a log the warehouse is rebuilt from expires records
 * (an existing topic keeps its own configuration: ensureTopics never changes it). A warning and
 * not a refusal: the two places where an expired record would be lost silently refuse on their
 * own (a consumer whose committed offset is gone, see assertCommittedOffsetsInRange, and
 * `replay --rebuild` over a truncated log), and a finite retention can be an operator's choice.
 */
export async function warnIfLogExpires(admin: Admin, topics: string[], log: Logger): Promise<void> {
  const { resources } = await retry(() => admin.describeConfigs({ resources: topics.map((name) => ({ type: 2, name })), includeSynonyms: false }), { maxDelayMs: 2000 });
  for (const resource of resources) {
    for (const [setting, keep] of Object.entries(KEEP_FOREVER)) {
      const value = resource.configEntries.find((e) => e.configName === setting)?.configValue;
      if (value !== undefined && value !== keep) {
        log.warn('log topic expires records: replay and rebuild cannot go back further', {
          topic: resource.resourceName,
          setting,
          value,
          fix: `kafka-configs --alter --entity-type topics --entity-name ${resource.resourceName} --add-config ${setting}=${keep}`,
        });
      }
    }
  }
}

/**
 * Refuses when a committed offset of `groupId` is outside its partition's log (below the first
 * offset still kept, or past the end). kafkajs would silently jump to the earliest offset there
 * (consumerGroup.recoverFromOffsetOutOfRange), skipping records the group never read. `fix`
 * is the command that moves the group once the operator has decided what to do about them.
 */
export async function assertCommittedOffsetsInRange(admin: Admin, groupId: string, topics: string[], fix: string): Promise<void> {
  // Just after a topic is created, a broker can still answer NOT_LEADER for a moment.
  const committed = await retry(() => admin.fetchOffsets({ groupId, topics }), { maxDelayMs: 2000 });
  for (const { topic, partitions } of committed) {
    const withOffsets = partitions.filter((p) => BigInt(p.offset) >= 0n); // none committed: the consumer starts at the beginning
    if (withOffsets.length === 0) continue;
    const ranges = new Map((await retry(() => admin.fetchTopicOffsets(topic), { maxDelayMs: 2000 })).map((p) => [p.partition, p]));
    for (const { partition, offset } of withOffsets) {
      const range = ranges.get(partition);
      if (!range) continue;
      const below = BigInt(offset) < BigInt(range.low);
      if (!below && BigInt(offset) <= BigInt(range.high)) continue;
      throw offsetGoneError({ groupId, topic, partition, offset, low: range.low, high: range.high, fix });
    }
  }
}

/** The one-line refusal for a consumer position that is no longer (or not yet) in the log. */
export function offsetGoneError(o: { groupId: string; topic: string; partition: number; offset: string; low: string; high: string; fix: string }): LoaderError {
  const below = BigInt(o.offset) < BigInt(o.low);
  const why = below ? `records ${o.offset}..${BigInt(o.low) - 1n} were deleted (retention or deleteRecords) before this group read them` : 'the offset is past the end of the log (was the topic recreated?)';
  return new LoaderError(
    `consumer group ${o.groupId}: committed offset ${o.offset} of ${o.topic} partition ${o.partition} is not in the log (earliest available ${o.low}, end ${o.high}): ${why}; ` +
      `refusing to skip them. Decide what replaces them, then move the group with \`${o.fix}\` (or --to-offsets)`,
    { context: { topic: o.topic, partition: o.partition, offset: o.offset } },
  );
}

/**
 * Refuses when co-partitioned topics (partition n of each holds the same keys) have different
 * partition counts: a key would then be looked up in a partition that never held it.
 */
export async function assertCoPartitioned(admin: Admin, topics: string[], fix: (count: number) => string): Promise<void> {
  const { topics: metadata } = await retry(() => admin.fetchTopicMetadata({ topics }), { maxDelayMs: 2000 });
  const counts = topics.map((topic) => ({ topic, count: metadata.find((t) => t.name === topic)?.partitions.length ?? 0 }));
  const [first, ...rest] = counts;
  const other = rest.find((c) => c.count !== first?.count);
  if (!first || !other) return;
  throw new LoaderError(
    `${first.topic} has ${first.count} partitions but ${other.topic} has ${other.count}: they must be equal, because partition n of each holds the same resources; refusing to start (versions would restart at 1). Fix: \`${fix(Math.max(...counts.map((c) => c.count)))}\``,
    { context: { topic: other.topic } },
  );
}

/** The partition the loader's producers put `key` in, for a topic of `count` partitions. */
export function partitionOfKey(key: string, count: number): number {
  const partitionMetadata = Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
  return defaultPartitioner()({ topic: '', partitionMetadata, message: { key, value: null } });
}

/**
 * Refuses when the latest records of a keyed topic sit in partitions their keys no longer map to:
 * the topic grew (kafka-topics --alter) and what it holds was not moved. Reads the last
 * `sample` records of each partition (uncommitted ones too: a crashed writer's open transaction
 * must not make this wait), not the whole topic, so start time does not grow with it; a topic
 * grown by hand has about half its keys (6 -> 12) in the wrong place, so a sample finds one.
 * Partitions added by hand are empty until something writes them, which is what triggers the read.
 */
export async function assertKeysInPlace(kafka: Kafka, admin: Admin, topic: string, fix: string, sample = 20): Promise<void> {
  const ranges = await retry(() => admin.fetchTopicOffsets(topic), { maxDelayMs: 2000 });
  // The read costs a consumer group join (about 5 s): made only when some partitions were never
  // written while others were, as right after partitions were added (or while a topic is young).
  const written = ranges.filter((r) => BigInt(r.high) > 0n).length;
  if (written === 0 || written === ranges.length) return;
  const from = new Map(ranges.map((r) => [r.partition, String(BigInt(r.high) - BigInt(sample))]));
  // Per partition and key, the latest record of the sample: a moved record is followed by its tombstone.
  const misplaced = new Map<string, { key: string; partition: number; belongs: number }>();
  await readToEnd(
    kafka,
    topic,
    (partition, m) => {
      const key = m.key?.toString('utf8');
      if (key === undefined) return;
      const belongs = partitionOfKey(key, ranges.length);
      if (belongs === partition) return;
      if (m.value === null) misplaced.delete(`${partition}/${key}`);
      else misplaced.set(`${partition}/${key}`, { key, partition, belongs });
    },
    undefined,
    { from, readUncommitted: true },
  );
  const first = misplaced.values().next().value;
  if (!first) return;
  throw new LoaderError(
    `${topic} partition ${first.partition} holds ${first.key}, which belongs in partition ${first.belongs} of its ${ranges.length}: the topic grew without its records being moved; refusing to start (versions would restart at 1). Fix: \`${fix}\``,
    { context: { topic, partition: first.partition } },
  );
}
