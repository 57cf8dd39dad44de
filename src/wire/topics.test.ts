import { describe, expect, it } from 'vitest';
import { enricherTopicSpecs, enricherTopics, pipelineTopicSpecs, topicNames } from './topics.js';

describe('topic specs', () => {
  it('create webhooks, snapshots and the enricher topics with the configured count, the DLQs with one', () => {
    const pipeline = pipelineTopicSpecs(topicNames('p'), 3);
    expect([pipeline.webhooks.numPartitions, pipeline.snapshots.numPartitions]).toEqual([3, 3]);
    expect([pipeline.webhooksDlq.numPartitions, pipeline.snapshotsDlq.numPartitions]).toEqual([1, 1]);
    expect(enricherTopicSpecs(enricherTopics('p'), 3).map((s) => s.numPartitions)).toEqual([3, 3, 3]);
  });
});
