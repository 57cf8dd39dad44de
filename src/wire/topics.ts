/** How a topic is created (ensureTopics): its name, partition count and configuration. */
export interface TopicSpec {
  topic: string;
  numPartitions: number;
  /** Broker-side topic configuration (e.g. cleanup.policy, min.insync.replicas). */
  configEntries?: Record<string, string>;
}

/**
 * Topic-level settings that make a log keep every record. The webhook and snapshot logs are what
 * replay and `replay --rebuild` read; set on the topic itself so that a cluster's default
 * (7 days on a stock broker) cannot apply.
 */
export const KEEP_FOREVER: Record<string, string> = { 'retention.ms': '-1', 'retention.bytes': '-1' };

/** The public topics of docs/CONTRACT.md section 4, derived from TOPIC_PREFIX. */
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

/**
 * The default partition count of the pipeline's topics (TOPIC_PARTITIONS). webhooks, snapshots
 * and the enricher's internal topics have the same count, so that a key lands on the same
 * partition number in each (murmur2); a group has at most that many members with work. DLQs are
 * low-volume: one partition keeps them in arrival order. Counts apply when a topic is created;
 * an existing topic keeps its own. webhooks and snapshots are the logs replay and rebuild read:
 * they keep every record.
 */
export const PIPELINE_PARTITIONS = 6;

export function pipelineTopicSpecs(names: TopicNames, partitions = PIPELINE_PARTITIONS): Record<keyof TopicNames, TopicSpec> {
  return {
    webhooks: { topic: names.webhooks, numPartitions: partitions, configEntries: KEEP_FOREVER },
    snapshots: { topic: names.snapshots, numPartitions: partitions, configEntries: KEEP_FOREVER },
    webhooksDlq: { topic: names.webhooksDlq, numPartitions: 1 },
    snapshotsDlq: { topic: names.snapshotsDlq, numPartitions: 1 },
  };
}

/**
 * The enricher's internal topics. Both are keyed `<ResourceType>:<id>` and have the snapshot
 * topic's partition count, so partition p of each holds the same resources: whoever consumes
 * requests partition p owns those resources, and their heads are in heads partition p.
 */
export interface EnricherTopics {
  requests: string;
  heads: string;
  /** Requests to read a resource again later (delay-forwarder.ts), keyed like the requests. */
  delayed: string;
}

export function enricherTopics(prefix: string): EnricherTopics {
  return { requests: `${prefix}.enricher.requests`, heads: `${prefix}.enricher.heads`, delayed: `${prefix}.enricher.delayed` };
}

export function enricherTopicSpecs(t: EnricherTopics, partitions = PIPELINE_PARTITIONS): TopicSpec[] {
  return [
    // Requests are consumed within seconds; a week of retention covers any outage worth replaying.
    { topic: t.requests, numPartitions: partitions, configEntries: { 'retention.ms': String(7 * 24 * 3600 * 1000) } },
    // The latest head per resource is all that matters: compaction keeps restore time bounded.
    // A delayed request waits at most the longest retry window; a week covers any outage on top.
    { topic: t.delayed, numPartitions: partitions, configEntries: { 'retention.ms': String(7 * 24 * 3600 * 1000) } },
    { topic: t.heads, numPartitions: partitions, configEntries: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' } },
  ];
}

/** Where each type's backfill got to: a compacted topic keyed by type, so a rerun resumes. */
export const backfillProgressTopic = (prefix: string) => `${prefix}.backfill.progress`;

export function backfillProgressTopicSpec(topic: string): TopicSpec {
  return { topic, numPartitions: 1, configEntries: { 'cleanup.policy': 'compact' } };
}

/**
 * The redrive markers: one record per dead letter sent back to its source, keyed by the letter's
 * id (`<dlq topic>:<partition>:<offset>`), written in the same transaction as the copy. Compacted:
 * a marker is never replaced, so every one is kept. `billing-loader dlq redrive` reads them to send
 * no letter twice.
 */
export const dlqRedrivesTopic = (prefix: string) => `${prefix}.dlq.redrives`;

export function dlqRedrivesTopicSpec(topic: string): TopicSpec {
  return { topic, numPartitions: 1, configEntries: { 'cleanup.policy': 'compact' } };
}
