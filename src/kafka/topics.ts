import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, ITopicConfig } from 'kafkajs';
import type { TopicSpec } from '../wire/topics.js';

/**
 * Creates the topics that do not exist yet, with the replication factor the cluster allows
 * (at most 3, at most the number of brokers), and returns once every partition has a leader.
 * Existing topics are left as they are: partition counts of a live topic are an operator's
 * decision, never changed silently. Safe when several processes create the same topics at once.
 */
export async function ensureTopics(admin: Admin, specs: TopicSpec[], timeoutMs = 30_000): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length > 0) {
    const { brokers } = await admin.describeCluster();
    const replicationFactor = Math.min(3, brokers.length);
    const topics: ITopicConfig[] = missing.map((s) => ({
      topic: s.topic,
      numPartitions: s.numPartitions,
      replicationFactor,
      configEntries: Object.entries({ 'min.insync.replicas': String(Math.min(2, replicationFactor)), ...s.configEntries }).map(([name, value]) => ({ name, value })),
    }));
    try {
      // kafkajs's own waitForLeaders retries only LEADER_NOT_AVAILABLE, but a just-created topic
      // can also answer UNKNOWN_TOPIC_OR_PARTITION for a moment; we wait below instead.
      await admin.createTopics({ topics, waitForLeaders: false });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err; // another process created them first: fine
    }
  }
  await waitForLeaders(admin, specs.map((s) => s.topic), timeoutMs);
}

function isAlreadyExists(err: unknown): boolean {
  const e = err as { type?: string; errors?: { type?: string }[] };
  return e.type === 'TOPIC_ALREADY_EXISTS' || (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((x) => x.type === 'TOPIC_ALREADY_EXISTS'));
}

async function waitForLeaders(admin: Admin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
      if (metadata.length === topics.length && metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (err) {
      const type = (err as { type?: string }).type;
      if (type !== 'UNKNOWN_TOPIC_OR_PARTITION' && type !== 'LEADER_NOT_AVAILABLE') throw err;
    }
    if (Date.now() > deadline) throw new Error(`topics ${topics.join(', ')} have no leader after ${timeoutMs} ms`);
    await sleep(100);
  }
}
