import { randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { closeHangingTransactions, type TopicPartitions } from '../kafka/hanging-transactions.js';
import { assertReadable, type FormatFields } from '../wire/record-format.js';
import type { Head } from './versioning.js';

/** A head as stored on the heads topic: the version decision's input, plus the fetch time (valid_from stays monotonic). */
export interface StoredHead extends Head {
  fetchedAt: number;
  /** Contracts: the customer the version references (its customer is read when this changes). Absent in heads written before it existed. */
  customerId?: string;
  /** Contracts: the payment escalation processes to read again on PaymentEscalationReset (escalation-processes.ts). */
  escalationProcessIds?: string[];
}

/** The format heads are written in; a reader reads newer ones that declare it enough (src/wire/record-format.ts). */
const FORMAT = 1;

export function encodeHead(head: StoredHead): Buffer {
  return Buffer.from(JSON.stringify({ v: FORMAT, ...head }));
}

/**
 * A head of this format, or of a newer one readable by it, with the fields this format knows.
 * Throws on a head only a newer enricher can read: numbering that resource's versions from a
 * misread head would be worse than stopping.
 */
export function decodeHead(value: Buffer): StoredHead {
  const h = JSON.parse(value.toString('utf8')) as StoredHead & FormatFields;
  assertReadable(h, FORMAT, 'head');
  return {
    version: h.version, contentHash: h.contentHash, deleted: h.deleted, fetchedAt: h.fetchedAt, ...(typeof h.customerId === 'string' ? { customerId: h.customerId } : {}),
    ...(Array.isArray(h.escalationProcessIds) ? { escalationProcessIds: h.escalationProcessIds.filter((id): id is string => typeof id === 'string') } : {}),
  };
}

/** Keys of restore barriers: tombstones, so compaction drops them and no reader keeps one. */
const BARRIER_PREFIX = 'restore-barrier:';

/** A restore barrier committed to a heads partition: its key, and the offset it was written at. */
export interface RestoreBarrier {
  key: string;
  offset: string;
}

/**
 * Commits a barrier (a tombstone under a fresh key) to a heads partition, with the producer that
 * has just fenced the partition's previous owner. Reading the partition read-committed up to the
 * barrier (catchUpHeads) then sees every head committed before it, and waits for any transaction
 * still open before it rather than stopping there. Without one, a partition whose first unread
 * record belongs to a transaction still open looks read to its end (read-to-end.ts): a restore
 * right after a broker restart came back without heads that had committed, and the fetcher
 * numbered those resources' versions from 1 again. The offset lets a catch-up start no later
 * than the barrier, whatever the cache's mark says.
 *
 * The same transaction takes in `closing` (every partition the producer's transactional id may
 * have written to) without a record: its COMMIT marker is written to each, and closes whatever
 * that producer id left open there (closeHangingTransactions).
 */
export async function writeRestoreBarrier(producer: Producer, topic: string, partition: number, closing: TopicPartitions[] = []): Promise<RestoreBarrier> {
  const key = `${BARRIER_PREFIX}${randomUUID()}`;
  const transaction = await producer.transaction();
  let offset: string | undefined;
  try {
    const [written] = await transaction.send({ topic, acks: -1, messages: [{ key, value: null, partition }] });
    offset = written?.baseOffset ?? written?.offset;
    await closeHangingTransactions(transaction, closing);
    await transaction.commit();
  } catch (err) {
    await transaction.abort().catch(() => undefined);
    throw err;
  }
  if (offset === undefined) throw new Error(`the broker reported no offset for the restore barrier in ${topic}/${partition}`);
  return { key, offset };
}

/** A restore barrier's key: a catch-up skips it (it is no head). */
export function isRestoreBarrier(key: string): boolean {
  return key.startsWith(BARRIER_PREFIX);
}
