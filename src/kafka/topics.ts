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
