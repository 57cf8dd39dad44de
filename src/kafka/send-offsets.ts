import type { Transaction } from 'kafkajs';
import { retry } from '../retry.js';

type Offsets = Parameters<Transaction['sendOffsets']>[0];

/**
 * The answers on which the offsets are sent again, with kafkajs's names for them:
 * CONCURRENT_TRANSACTIONS while the coordinator is still writing the previous transaction's
 * markers, which follows every commit and, for longer, a broker restart; the others while a
 * transaction or group coordinator is loading its log or has moved, in the seconds after a
 * broker restart. kafkajs 2.2.4 retries none of them for AddOffsetsToTxn, and for TxnOffsetCommit
 * only with the patches in patches/ (its retry lists used names it never produces).
 */
const RETRIED = new Set(['CONCURRENT_TRANSACTIONS', 'GROUP_LOAD_IN_PROGRESS', 'GROUP_COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR_FOR_GROUP', 'REQUEST_TIMED_OUT']);

/**
 * `transaction.sendOffsets`, tried again while the coordinators answer one of RETRIED. The Java
 * producer retries these. Without this a good transaction was aborted and its partition started
 * over (new producers, a fence and a heads restore), for every part in the seconds after a broker
 * restart. Retrying is safe: both requests are idempotent and the transaction stays open meanwhile.
 */
export function sendOffsets(transaction: Pick<Transaction, 'sendOffsets'>, offsets: Offsets, attempts = 20): Promise<void> {
  return retry(() => transaction.sendOffsets(offsets), { attempts, minDelayMs: 20, maxDelayMs: 1000, shouldRetry: isCoordinatorNotReady });
}

function isCoordinatorNotReady(err: unknown): boolean {
  const type = typeof err === 'object' && err !== null ? (err as { type?: unknown }).type : undefined;
  return typeof type === 'string' && RETRIED.has(type);
}
