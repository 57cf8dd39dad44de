import type { TopicSpec } from '../kafka/topics.js';
import { PIPELINE_PARTITIONS } from '../kafka/topics.js';

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

export function enricherTopicSpecs(t: EnricherTopics): TopicSpec[] {
  return [
    // Requests are consumed within seconds; a week of retention covers any outage worth replaying.
    { topic: t.requests, numPartitions: PIPELINE_PARTITIONS, configEntries: { 'retention.ms': String(7 * 24 * 3600 * 1000) } },
    // The latest head per resource is all that matters: compaction keeps restore time bounded.
    // A delayed request waits at most the longest retry window; a week covers any outage on top.
    { topic: t.delayed, numPartitions: PIPELINE_PARTITIONS, configEntries: { 'retention.ms': String(7 * 24 * 3600 * 1000) } },
    { topic: t.heads, numPartitions: PIPELINE_PARTITIONS, configEntries: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' } },
  ];
}
