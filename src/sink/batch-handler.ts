import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import type pg from 'pg';
import { UnknownSchemaIdError, errorMessage } from '../errors.js';
import type { Health } from '../health.js';
import type { TopicNames } from '../wire/topics.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { retry } from '../retry.js';
import { writeBatch, type BatchOutcome } from './batch-writer.js';
import type { CommitThrottle } from '../kafka/commit-throttle.js';
import type { DeadLetterWriter } from '../kafka/dead-letters.js';
import { isRebalanceError } from '../kafka/rebalance-error.js';
import { deadLetterFor, type DeadLetter } from '../wire/dead-letter.js';
import { decodeBatch } from './decode-batch.js';
import type { SinkMetrics } from './sink-metrics.js';

export interface BatchHandlerContext {
  pool: pg.Pool;
  registry: Registry;
  deadLetters: DeadLetterWriter;
  schema: string;
  names: TopicNames;
  metrics: SinkMetrics;
  health: Health;
  log: Logger;
  /** Aborted when the sink stops: a batch still failing is abandoned, uncommitted. */
  stopping: AbortSignal;
  /** Commits the resolved offsets, at most once per interval. */
  commits: CommitThrottle;
}

/** Readiness condition set while batches keep failing (database or broker unreachable). */
export const WRITE_CONDITION = 'sink-writes';

/**
 * The eachBatch handler: decode, write in one transaction, send dead letters, and only then
 * resolve and commit the batch's offsets (docs/CONTRACT.md properties 5, 6, 7). Any failure of those
 * steps retries the whole batch with backoff, heartbeating meanwhile so the group keeps the
 * partition; every step is idempotent, so a retry after a partial success (a COMMIT whose answer
 * was lost, dead letters sent before a crash) writes nothing twice in the warehouse. If the sink
 * stops or loses the partition while retrying (checked before every heartbeat, and a heartbeat
 * that meets a rebalance throws the batch back to kafkajs), the batch is left uncommitted and
 * will be delivered again to whoever owns the partition next. The retries are the shared `retry` helper's,
 * so a programmer error (a TypeError and kin) is not retried in place: the batch fails, the
 * consumer is replaced (src/kafka/supervised-consumer.ts) and the bug is in the log at once.
 */
export function createBatchHandler(ctx: BatchHandlerContext) {
  return async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
    const last = batch.messages[batch.messages.length - 1];
    if (!last) return;
    const kind = batch.topic === ctx.names.snapshots ? 'snapshots' : 'webhooks';
    const dlqTopic = kind === 'snapshots' ? ctx.names.snapshotsDlq : ctx.names.webhooksDlq;
    const where = { topic: batch.topic, partition: batch.partition, firstOffset: batch.firstOffset(), lastOffset: last.offset };
    ctx.metrics.batchSize.observe({ topic: kind }, batch.messages.length);

    const written = await retry(
      async (bail, attempt) => {
        if (!isRunning() || isStale() || ctx.stopping.aborted) return false;
        // Heartbeats keep the partition assigned through a long outage. During a rebalance every
        // heartbeat throws; the batch then goes back to kafkajs unresolved, kafkajs rejoins, and
        // the partition's next owner reads it again from the committed offset.
        if (attempt > 0) {
          await heartbeat().catch((err: unknown) => {
            if (isRebalanceError(err)) bail(err);
            throw err;
          });
          if (!isRunning() || isStale() || ctx.stopping.aborted) return false;
        }
        const decoded = await decodeBatch(ctx.registry, kind, batch.topic, batch.partition, batch.messages, dlqTopic);
        const started = performance.now();
        const outcome = await writeBatch(ctx.pool, ctx.schema, decoded.snapshots, decoded.webhooks);
        ctx.metrics.commitLatency.observe((performance.now() - started) / 1000);
        const letters = [...decoded.letters, ...refusalLetters(outcome, batch.messages, dlqTopic)];
        if (letters.length > 0) await ctx.deadLetters.send(letters);
        report(ctx, outcome, letters, where);
        return true;
      },
      {
        // Until it succeeds or the sink stops: a batch is never skipped (records that can never
        // be written go to the DLQ inside the attempt, so what fails here is the database, the
        // broker or the registry, and waiting for them is the only way not to lose anything).
        attempts: Infinity,
        minDelayMs: 200,
        maxDelayMs: 10_000,
        shouldRetry: () => true,
        signal: ctx.stopping,
        onRetry: (err, attempt, delayMs) => {
          ctx.metrics.databaseRetries.inc({ reason: reasonOf(err) });
          if (err instanceof UnknownSchemaIdError) {
            ctx.health.setCondition(WRITE_CONDITION, err.message);
            ctx.log.error('schema registry does not know the schema id of a record, holding the batch', { ...where, offset: err.context.offset, schemaId: err.schemaId, attempt, delayMs, err: errorMessage(err.cause) });
          } else {
            ctx.health.setCondition(WRITE_CONDITION, `batch write failing, retrying: ${errorMessage(err)}`);
            (attempt === 1 ? ctx.log.warn : ctx.log.error)('sink batch failed, retrying', { ...where, attempt, delayMs, err });
          }
        },
      },
    ).catch((err: unknown) => {
      // Stopped while waiting to try again: the batch stays uncommitted for the partition's next owner.
      if (ctx.stopping.aborted) return false;
      throw err;
    });
    if (!written) return;
    ctx.health.setCondition(WRITE_CONDITION, undefined);
    // Offsets move only after the database COMMIT and the dead letters (the at-least-once edge).
    resolveOffset(last.offset);
    await ctx.commits.commit(payload);
  };
}

function refusalLetters(outcome: BatchOutcome, messages: KafkaMessage[], dlqTopic: string): DeadLetter[] {
  if (outcome.refused.length === 0) return [];
  const byOffset = new Map(messages.map((m) => [m.offset, m]));
  return outcome.refused.map(({ row, errorClass, message }) => {
    const source = byOffset.get(row.coordinates.offset);
    return deadLetterFor(dlqTopic, row.coordinates.topic, row.coordinates.partition, { offset: row.coordinates.offset, key: source?.key ?? null, value: source?.value ?? null, headers: source?.headers }, errorClass, message);
  });
}

function report(ctx: BatchHandlerContext, outcome: BatchOutcome, letters: DeadLetter[], where: Record<string, unknown>): void {
  const m = ctx.metrics;
  if (outcome.snapshotsWritten > 0) m.rowsWritten.inc({ table: 'resource_versions' }, outcome.snapshotsWritten);
  if (outcome.webhooksWritten > 0) m.rowsWritten.inc({ table: 'webhook_events' }, outcome.webhooksWritten);
  if (outcome.alreadyStored > 0) m.alreadyStored.inc(outcome.alreadyStored);
  m.allDeadLetters(letters);
  for (const l of letters) {
    m.deadLetters.inc({ topic: l.dlqTopic, error_class: l.errorClass });
    ctx.log.warn('record sent to the DLQ', { dlq: l.dlqTopic, topic: l.sourceTopic, partition: l.sourcePartition, offset: l.sourceOffset, errorClass: l.errorClass, reason: l.errorMessage });
  }
  for (const { row, expected } of outcome.gaps) {
    m.versionGaps.inc({ resource_type: row.resourceType });
    ctx.log.error('snapshot version gap: written anyway', { resourceType: row.resourceType, resourceId: row.resourceId, version: row.version, expected, ...row.coordinates });
  }
  for (const row of outcome.lateFills) {
    m.lateFills.inc({ resource_type: row.resourceType });
    ctx.log.warn('late snapshot version filled a gap', { resourceType: row.resourceType, resourceId: row.resourceId, version: row.version, ...row.coordinates });
  }
  if (outcome.isolated) ctx.log.warn('batch written row by row after a data error', where);
}

function reasonOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.name : 'unknown';
}
