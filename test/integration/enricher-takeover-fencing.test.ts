import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { enricherTopics } from '../../src/wire/topics.js';
import { encodeHead } from '../../src/enricher/head-store.js';
import { createKafka } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * The previous owner of request partition 0 (a zombie: same transactional id, still alive) has
 * a transaction open on heads partition 0 when the partition moves. The new owner must fence it
 * at once: its open transaction aborted (else the heads restore cannot reach the end of the
 * partition until the zombie's transaction timeout, 10 minutes here), and its commit refused.
 */
let h: EnricherHarness;
let zombie: Producer | undefined;
beforeAll(async () => {
  h = await startEnricherHarness();
});
afterAll(async () => {
  await zombie?.disconnect();
  await h?.stop();
});

it('a takeover fences the previous owner: its commit fails and the heads restore ends promptly', { timeout: 150_000 }, async () => {
  await h.flushEnricher();
  const internal = enricherTopics(h.config.topicPrefix);
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'zombie-fetcher', log: createLogger('error') });
  zombie = kafka.producer({ transactionalId: `${internal.requests}.fetcher.0`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 600_000 });
  await zombie.connect();
  const transaction = await zombie.transaction();
  await transaction.send({ topic: internal.heads, acks: -1, messages: [{ key: 'Contract:zombie', partition: 0, value: encodeHead({ version: 1, contentHash: 'x', deleted: false, fetchedAt: Date.now() }) }] });

  // A second instance joins: partitions move, and whoever gets partition 0 takes it over.
  await h.startEnricher();
  await h.flushEnricher(); // a request in every partition, partition 0 included, gets its version
  await expect(transaction.commit()).rejects.toThrow();
});
