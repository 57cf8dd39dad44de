import type { Producer } from 'kafkajs';

/**
 * Fences every earlier holder of a connected transactional producer's `transactional.id`: bumps
 * the epoch, aborts the transaction it left open, and makes its later sends and commits fail.
 *
 * `producer.connect()` does not do this in kafkajs (2.2.x, src/producer/index.js and
 * eosManager): with `idempotent: true` it sends InitProducerId from a non-transactional
 * eosManager, which leaves the transactional id out of the request, so the broker hands out a
 * fresh producer id and fences nobody. The transactional InitProducerId (to the transaction
 * coordinator, with the id) is sent only at the first `producer.transaction()`; the coordinator
 * then aborts the previous holder's open transaction, answering CONCURRENT_TRANSACTIONS (kafkajs
 * retries) until the abort markers are written. Aborting that empty transaction right away sends
 * nothing: eosManager.abort() skips EndTxn when no partition or offset was added. So the fence
 * costs the one InitProducerId the first transaction would have sent anyway.
 */
export async function fencePreviousOwner(producer: Producer): Promise<void> {
  const transaction = await producer.transaction();
  await transaction.abort();
}
