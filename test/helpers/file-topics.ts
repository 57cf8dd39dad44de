import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import { ensureTopics } from '../../src/kafka/topics.js';
import type { TopicSpec } from '../../src/wire/topics.js';

/**
 * Topics of one test file on the real broker: created before its tests (ensureTopics, which
 * waits for every partition's leader) and deleted after them.
 */
export function fileTopics(kafka: Kafka, specs: TopicSpec[]): void {
  beforeAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, specs);
    } finally {
      await admin.disconnect();
    }
  });
  afterAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.deleteTopics({ topics: specs.map((s) => s.topic) }).catch(() => undefined);
    } finally {
      await admin.disconnect();
    }
  });
}
