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

export function decodeHead(value: Buffer): StoredHead {
  const h = JSON.parse(value.toString('utf8')) as StoredHead & { v: number };
  return {
    version: h.version, contentHash: h.contentHash, deleted: h.deleted, fetchedAt: h.fetchedAt, ...(typeof h.customerId === 'string' ? { customerId: h.customerId } : {}),
    ...(Array.isArray(h.escalationProcessIds) ? { escalationProcessIds: h.escalationProcessIds.filter((id): id is string => typeof id === 'string') } : {}),
  };
}
