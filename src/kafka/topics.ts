import type { Admin, ITopicConfig } from 'kafkajs';

/** The public topics of INTERFACE.md section 4, derived from TOPIC_PREFIX. */
export interface TopicNames {
  webhooks: string;
  snapshots: string;
  webhooksDlq: string;
  snapshotsDlq: string;
}

export function topicNames(prefix: string): TopicNames {
  return {
    webhooks: `${prefix}.webhooks`,
    snapshots: `${prefix}.snapshots`,
    webhooksDlq: `${prefix}.webhooks.dlq`,
    snapshotsDlq: `${prefix}.snapshots.dlq`,
  };
}

export interface TopicSpec {
  topic: string;
  numPartitions: number;
  /** Broker-side topic configuration (e.g. cleanup.policy, min.insync.replicas). */
  configEntries?: Record<string, string>;
}

/**
 * Creates the topics that do not exist yet, with the replication factor the cluster allows
 * (at most 3, at most the number of brokers). Existing topics are left as they are: partition
 * counts of a live topic are an operator's decision, never changed silently.
 */
export async function ensureTopics(admin: Admin, specs: TopicSpec[]): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length === 0) return;
  const { brokers } = await admin.describeCluster();
  const replicationFactor = Math.min(3, brokers.length);
  const topics: ITopicConfig[] = missing.map((s) => ({
    topic: s.topic,
    numPartitions: s.numPartitions,
    replicationFactor,
    configEntries: Object.entries({ 'min.insync.replicas': String(Math.min(2, replicationFactor)), ...s.configEntries }).map(([name, value]) => ({ name, value })),
  }));
  // createTopics answers false when another process created them first; that is fine.
  await admin.createTopics({ topics, waitForLeaders: true });
}

/**
 * Partition counts of the public topics. webhooks and snapshots have the same count so that a
 * key lands on the same partition number in both (murmur2), and 6 lets up to six consumers of
 * a group share the work. DLQs are low-volume: one partition keeps them in arrival order.
 * Counts apply when a topic is created; an existing topic keeps its own.
 */
export const PIPELINE_PARTITIONS = 6;

export function pipelineTopicSpecs(names: TopicNames): Record<keyof TopicNames, TopicSpec> {
  return {
    webhooks: { topic: names.webhooks, numPartitions: PIPELINE_PARTITIONS },
    snapshots: { topic: names.snapshots, numPartitions: PIPELINE_PARTITIONS },
    webhooksDlq: { topic: names.webhooksDlq, numPartitions: 1 },
    snapshotsDlq: { topic: names.snapshotsDlq, numPartitions: 1 },
  };
}
