import type { Kafka } from 'kafkajs';
import { readToEnd } from '../kafka/read-to-end.js';
import type { Head } from './versioning.js';

/** A head as stored on the heads topic: the version decision's input, plus the fetch time (valid_from stays monotonic). */
export interface StoredHead extends Head {
  fetchedAt: number;
  /** Contracts: the customer the version references (its customer is read when this changes). Absent in heads written before it existed. */
  customerId?: string;
  /** Contracts: the payment escalation processes to read again on PaymentEscalationReset (escalation-processes.ts). */
  escalationProcessIds?: string[];
}

export function encodeHead(head: StoredHead): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...head }));
}

function decodeHead(value: Buffer): StoredHead {
  const h = JSON.parse(value.toString('utf8')) as StoredHead & { v: number };
  return {
    version: h.version, contentHash: h.contentHash, deleted: h.deleted, fetchedAt: h.fetchedAt, ...(typeof h.customerId === 'string' ? { customerId: h.customerId } : {}),
    ...(Array.isArray(h.escalationProcessIds) ? { escalationProcessIds: h.escalationProcessIds.filter((id): id is string => typeof id === 'string') } : {}),
  };
}

/**
 * The latest head of every resource in the given partitions of the heads topic, read-committed
 * (only heads whose snapshot transaction committed). The caller fences older producers of those
 * partitions first, so no transaction is left open at the end of the log.
 */
export async function restoreHeads(kafka: Kafka, topic: string, partitions: number[]): Promise<Map<number, Map<string, StoredHead>>> {
  const result = new Map<number, Map<string, StoredHead>>(partitions.map((p) => [p, new Map()]));
  await readToEnd(
    kafka,
    topic,
    (partition, m) => {
      const heads = result.get(partition);
      const key = m.key?.toString('utf8');
      if (!heads || key === undefined) return;
      if (m.value === null) heads.delete(key);
      else heads.set(key, decodeHead(m.value));
    },
    partitions,
  );
  return result;
}
