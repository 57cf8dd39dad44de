import type { Transaction } from 'kafkajs';
import { retry } from '../retry.js';

type Offsets = Parameters<Transaction['sendOffsets']>[0];

/**
 * `transaction.sendOffsets`, tried again while the transaction coordinator answers
 * CONCURRENT_TRANSACTIONS: it does so until the previous transaction's markers are written,
 * which follows every commit and, for longer, a broker restart. kafkajs retries that answer
 * for AddPartitionsToTxn (inside a send) but not for AddOffsetsToTxn; the Java producer retries
 * both. Without this a good transaction was aborted and its partition started over (new
 * producers, a fence and a full heads restore). Retrying is safe: the request is idempotent and
 * the transaction stays open meanwhile.
 */
export function sendOffsets(transaction: Pick<Transaction, 'sendOffsets'>, offsets: Offsets, attempts = 20): Promise<void> {
  return retry(() => transaction.sendOffsets(offsets), { attempts, minDelayMs: 20, maxDelayMs: 1000, shouldRetry: isConcurrentTransactions });
}

function isConcurrentTransactions(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { type?: unknown }).type === 'CONCURRENT_TRANSACTIONS';
}
