import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { Head } from './versioning.js';

/** A head as stored on the heads topic: the version decision's input, plus the fetch time (valid_from stays monotonic). */
export interface StoredHead extends Head {
  fetchedAt: number;
}

export function encodeHead(head: StoredHead): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...head }));
}

function decodeHead(value: Buffer): StoredHead {
  const h = JSON.parse(value.toString('utf8')) as StoredHead & { v: number };
  return { version: h.version, contentHash: h.contentHash, deleted: h.deleted, fetchedAt: h.fetchedAt };
}

/**
 * Reads the latest head of every resource in the given partitions of the heads topic, from the
 * beginning to the end, read-committed (so only heads whose snapshot transaction committed).
 * The caller fences older producers of those partitions first, so no transaction is left open
 * at the end of the log and "the end" is reached. Uses a throwaway consumer group (kafkajs has
 * no manual assignment), deleted afterwards.
 */
export async function restoreHeads(kafka: Kafka, topic: string, partitions: number[]): Promise<Map<number, Map<string, StoredHead>>> {
  const result = new Map<number, Map<string, StoredHead>>(partitions.map((p) => [p, new Map()]));
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    const pending = new Set(partitions.filter((p) => offsets.some((o) => o.partition === p && o.high !== o.low)));
    if (pending.size === 0) return result;
    const groupId = `${topic}.restore.${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, readUncommitted: false, sessionTimeout: 10_000, heartbeatInterval: 1000 });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
        void consumer
          .run({
            autoCommit: false,
            eachBatch: async ({ batch }) => {
              const heads = result.get(batch.partition);
              if (!heads || !pending.has(batch.partition)) {
                consumer.pause([{ topic, partitions: [batch.partition] }]);
                return;
              }
              for (const m of batch.messages) {
                const key = m.key?.toString('utf8');
                if (key === undefined) continue;
                if (m.value === null) heads.delete(key);
                else heads.set(key, decodeHead(m.value));
              }
              // lastOffset() counts transaction markers, so lag 0 means the end of the partition.
              if (batch.offsetLag() === '0') {
                pending.delete(batch.partition);
                consumer.pause([{ topic, partitions: [batch.partition] }]);
                if (pending.size === 0) resolve();
              }
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return result;
  } finally {
    await admin.disconnect();
  }
}
