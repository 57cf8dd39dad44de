import type { EachBatchPayload, Kafka } from 'kafkajs';
import type pg from 'pg';
import { errorMessage } from '../errors.js';
import type { Health } from '../health.js';
import { quoteIdent } from '../db/pool.js';
import { startSupervisedConsumer } from '../kafka/supervised-consumer.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { retry } from '../retry.js';
import { readDeadLetter, type StoredDeadLetter } from '../wire/dead-letter.js';

export interface DeadLetterRecorderDeps {
  kafka: Kafka;
  registry: Registry;
  pool: pg.Pool;
  schema: string;
  /** The DLQ topics to record. */
  topics: string[];
  groupId: string;
  log: Logger;
  health: Health;
}

/** Readiness condition set while dead letters cannot be recorded (database or registry unreachable). */
export const RECORD_CONDITION = 'sink.dead-letters';

/**
 * Records every letter of the DLQ topics in the warehouse's `dead_letters` table (migration 0017),
 * whichever stage wrote it and in either format, so that `pipeline_health.dead_letters` counts
 * what the DLQs hold. A consumer group of its own (`<sink group>.dead-letters`): the DLQs keep
 * the broker's default retention, and letters they lose before being read are simply not
 * counted, where the sink's main group refuses to skip records. Offsets are committed after the
 * INSERT; a batch read again inserts nothing (the key is the letter's place in its DLQ). A failing
 * batch is retried with backoff until it succeeds or the sink stops.
 */
export async function startDeadLetterRecorder(deps: DeadLetterRecorderDeps): Promise<{ stop(): Promise<void> }> {
  const table = `${quoteIdent(deps.schema)}.dead_letters`;
  const stopping = new AbortController();
  const eachBatch = async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }: EachBatchPayload) => {
    const last = batch.messages[batch.messages.length - 1];
    if (!last) return;
    const done = await retry(
      async (_bail, attempt) => {
        if (attempt > 0) await heartbeat();
        if (!isRunning() || isStale() || stopping.signal.aborted) return false;
        const letters = await Promise.all(batch.messages.map((m) => readDeadLetter({ topic: batch.topic, partition: batch.partition, offset: m.offset }, m, (v) => deps.registry.decode(v))));
        await insert(deps.pool, table, letters);
        return true;
      },
      {
        attempts: Infinity,
        minDelayMs: 500,
        maxDelayMs: 30_000,
        shouldRetry: () => true,
        signal: stopping.signal,
        onRetry: (err, attempt, delayMs) => {
          deps.health.setCondition(RECORD_CONDITION, `dead letters not recorded, retrying: ${errorMessage(err)}`);
          deps.log.warn('recording dead letters failed, retrying', { topic: batch.topic, partition: batch.partition, attempt, delayMs, err });
        },
      },
    ).catch((err: unknown) => {
      if (stopping.signal.aborted) return false;
      throw err;
    });
    if (!done) return;
    deps.health.setCondition(RECORD_CONDITION, undefined);
    resolveOffset(last.offset);
    // Explicit offsets: without them kafkajs commits only under autoCommitInterval/Threshold, which
    // this consumer (autoCommit off) does not set, so the group would never commit and every start
    // would read both DLQs from their beginning again.
    await commitOffsetsIfNecessary({ topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() }] }] });
  };
  const consumer = await startSupervisedConsumer({
    name: 'sink.dead-letter-consumer',
    create: () => deps.kafka.consumer({ groupId: deps.groupId, sessionTimeout: 30_000, heartbeatInterval: 3000, maxWaitTimeInMs: 1000, readUncommitted: false }),
    async start(c) {
      await c.connect();
      await c.subscribe({ topics: deps.topics, fromBeginning: true });
      await c.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
    },
    log: deps.log,
    health: deps.health,
  });
  return {
    async stop() {
      stopping.abort();
      await consumer.stop();
    },
  };
}

async function insert(pool: pg.Pool, table: string, letters: StoredDeadLetter[]): Promise<void> {
  const col = <T>(f: (l: StoredDeadLetter) => T) => letters.map(f);
  await pool.query(
    `INSERT INTO ${table} (dlq_topic, dlq_partition, dlq_offset, stage, error_class, error_message, source_topic, source_partition, source_offset, failed_at)
     SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::bigint[], $10::timestamptz[])
     ON CONFLICT DO NOTHING`,
    [
      col((l) => l.id.topic),
      col((l) => l.id.partition),
      col((l) => l.id.offset),
      col((l) => l.stage),
      col((l) => l.errorClass),
      // PostgreSQL text holds no NUL character.
      col((l) => l.errorMessage.replaceAll('\u0000', '')),
      col((l) => l.sourceTopic),
      col((l) => l.sourcePartition),
      col((l) => l.sourceOffset),
      col((l) => new Date(l.failedAt).toISOString()),
    ],
  );
}
