import type { Admin } from 'kafkajs';
import { LoaderError } from '../errors.js';
import type { Logger } from '../log.js';

/**
 * Topic-level settings that make a log keep every record. The webhook and snapshot logs are what
 * replay and `replay --rebuild` read; set on the topic itself so that a cluster's default
 * (7 days on a stock broker) cannot apply.
 */
export const KEEP_FOREVER: Record<string, string> = { 'retention.ms': '-1', 'retention.bytes': '-1' };

/**
 * Warns, once per topic and setting, when a log the warehouse is rebuilt from expires records
 * (an existing topic keeps its own configuration: ensureTopics never changes it). A warning and
 * not a refusal: the two places where an expired record would be lost silently refuse on their
 * own (a consumer whose committed offset is gone, see assertCommittedOffsetsInRange, and
 * `replay --rebuild` over a truncated log), and a finite retention can be an operator's choice.
 */
export async function warnIfLogExpires(admin: Admin, topics: string[], log: Logger): Promise<void> {
  const { resources } = await admin.describeConfigs({ resources: topics.map((name) => ({ type: 2, name })), includeSynonyms: false });
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
  const committed = await admin.fetchOffsets({ groupId, topics });
  for (const { topic, partitions } of committed) {
    const ranges = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, p]));
    for (const { partition, offset } of partitions) {
      const range = ranges.get(partition);
      if (!range || BigInt(offset) < 0n) continue; // nothing committed: the consumer starts at the beginning
      const below = BigInt(offset) < BigInt(range.low);
      if (!below && BigInt(offset) <= BigInt(range.high)) continue;
      const why = below ? `records ${offset}..${BigInt(range.low) - 1n} were deleted (retention or deleteRecords) before this group read them` : 'the offset is past the end of the log (was the topic recreated?)';
      throw new LoaderError(
        `consumer group ${groupId}: committed offset ${offset} of ${topic} partition ${partition} is not in the log (earliest available ${range.low}, end ${range.high}): ${why}; ` +
          `refusing to skip them. Decide what replaces them, then move the group with \`${fix}\` (or --to-offsets)`,
        { context: { topic, partition, offset } },
      );
    }
  }
}
