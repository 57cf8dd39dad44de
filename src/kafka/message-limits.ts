import kafkajs, { type Kafka } from 'kafkajs';

// kafkajs is CommonJS: Node's ESM loader does not see this export by name (vitest does, so only
// the compiled loader would fail).
const { ConfigResourceTypes } = kafkajs;

/** Kafka's default `max.message.bytes` (1 MiB plus the 12 bytes of log overhead). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** Each topic's `max.message.bytes`, as readMessageLimits reads it. */
export type MessageLimits = (topic: string) => number;

/**
 * Each topic's `max.message.bytes`: the largest record batch its partitions accept (the
 * broker's `message.max.bytes` unless the topic overrides it; describeConfigs answers the value
 * in force either way). A produce over it fails with MESSAGE_TOO_LARGE, which no retry cures.
 */
export async function readMessageLimits(kafka: Kafka, topics: string[]): Promise<MessageLimits> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['max.message.bytes'] })),
    });
    const limits = new Map(resources.map((r) => [r.resourceName, Number(r.configEntries.find((e) => e.configName === 'max.message.bytes')?.configValue ?? DEFAULT_MAX_MESSAGE_BYTES)]));
    return (topic) => limits.get(topic) ?? DEFAULT_MAX_MESSAGE_BYTES;
  } finally {
    await admin.disconnect();
  }
}
