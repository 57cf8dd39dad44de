import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import type { Config } from '../config.js';
import { migrate, migrateSettings } from '../db/migrate.js';
import type { WarehouseRoles } from '../warehouse/schema-roles.js';
import { inTransaction, quoteIdent, withClient } from '../db/pool.js';
import { UserError } from '../errors.js';
import { topicNames } from '../wire/topics.js';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { retry } from '../retry.js';
import { writeBatch } from './batch-writer.js';
import { classifyDatabaseError } from '../errors.js';
import { decodeBatch } from './decode-batch.js';
import { assertGroupInactive, committedOffsets } from '../kafka/group-reset.js';

export interface RebuildDeps {
  kafka: Kafka;
  registry: Registry;
  pool: pg.Pool;
  log: Logger;
  /** One human line at a time (the CLI writes them to stderr). */
  progress: (line: string) => void;
}

export interface RebuildOptions {
  /** The sink's group: it must be stopped for the whole rebuild. */
  sinkGroupId: string;
  /** Swap even if a topic no longer starts at offset 0 (retention deleted its beginning). */
  allowTruncatedLog?: boolean;
  progressEveryMs?: number;
  /** The live schema's roles (DATABASE_ROLES), granted the fresh schema; default the cluster-wide ones. */
  roles?: WarehouseRoles;
}

export interface RebuildReport {
  schema: string;
  /** Where the previous warehouse now lives (null when there was none). */
  replacedSchema: string | null;
  recordsRead: number;
  versionsWritten: number;
  webhooksWritten: number;
  refused: number;
  versionsOutOfSequence: number;
}

/**
 * Rebuilds the warehouse from `<prefix>.snapshots` and `<prefix>.webhooks` (docs/CONTRACT.md property 5)
 * into a fresh schema, verifies it, and swaps it in by renaming both schemas in one transaction,
 * so analysts see the old warehouse or the new one, never a half-filled one (blue/green).
 *
 * The log is read up to the end offsets taken at the start. The sink must be stopped for the
 * whole run: a sink writing meanwhile would commit offsets past rows the fresh schema does not
 * have. Records the enricher publishes meanwhile are not lost: the stopped sink's committed
 * offsets are at most the captured ends, so on restart it writes them into the new warehouse
 * (and what it reads again is a no-op). Dead letters are not sent again: the live sink sent them.
 */
export async function rebuildWarehouse(deps: RebuildDeps, config: Config, options: RebuildOptions): Promise<RebuildReport> {
  const { kafka, pool, log, progress } = deps;
  const names = topicNames(config.topicPrefix);
  const topics = [names.snapshots, names.webhooks];
  const live = config.databaseSchema;
  const suffix = randomBytes(3).toString('hex');
  const fresh = `${live.slice(0, 40)}_rebuild_${suffix}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await assertGroupInactive(admin, options.sinkGroupId, 'sink');
    const sinkOffsetsBefore = JSON.stringify([...(await committedOffsets(admin, options.sinkGroupId, topics))].map(([t, m]) => [t, [...m]]));
    const ends = new Map<string, Map<number, bigint>>();
    let total = 0n;
    for (const topic of topics) {
      const offsets = await admin.fetchTopicOffsets(topic);
      if (!options.allowTruncatedLog && offsets.some((p) => p.low !== '0')) {
        throw new UserError(`topic '${topic}' no longer starts at offset 0 (retention removed its beginning): a rebuild would lose history; pass --allow-truncated-log to rebuild from what is left`);
      }
      ends.set(topic, new Map(offsets.map((p) => [p.partition, BigInt(p.high)])));
      for (const p of offsets) total += BigInt(p.high) - BigInt(p.low);
    }
    progress(`rebuild: reading ${total} records of ${topics.join(', ')} into schema ${fresh}`);
    // The live schema's roles: after the swap the fresh schema is the tenant's warehouse.
    await migrate(pool, { schema: fresh, roles: options.roles, log, ...migrateSettings(config) });

    const stats = { recordsRead: 0, versionsWritten: 0, webhooksWritten: 0, refused: 0 };
    try {
      await loadUntilEnds(deps, fresh, ends, names.snapshots, stats, total, options.progressEveryMs ?? 5000);
      const verification = await verify(pool, live, fresh, stats);
      progress(`rebuild: verified ${verification.versions} versions and ${verification.webhooks} webhooks; ${verification.outOfSequence} versions out of sequence`);

      // Still nobody consuming, and nobody moved the sink while we read: then the swap is safe.
      await assertGroupInactive(admin, options.sinkGroupId, 'sink');
      const sinkOffsetsAfter = JSON.stringify([...(await committedOffsets(admin, options.sinkGroupId, topics))].map(([t, m]) => [t, [...m]]));
      if (sinkOffsetsAfter !== sinkOffsetsBefore) throw new UserError(`the sink group '${options.sinkGroupId}' committed offsets during the rebuild; stop the sink and run the rebuild again`);
      const replacedSchema = await swap(pool, live, fresh);
      progress(replacedSchema ? `rebuild: swapped in; the previous warehouse is now schema ${replacedSchema} (DROP SCHEMA ${replacedSchema} CASCADE when satisfied)` : `rebuild: schema ${live} created`);
      return { schema: live, replacedSchema, ...stats, versionsOutOfSequence: verification.outOfSequence };
    } catch (err) {
      // The live warehouse was not touched; the half-built one is useless.
      await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(fresh)} CASCADE`).catch(() => undefined);
      throw err;
    }
  } finally {
    await admin.disconnect();
  }
}

async function loadUntilEnds(
  deps: RebuildDeps,
  schema: string,
  ends: Map<string, Map<number, bigint>>,
  snapshotsTopic: string,
  stats: { recordsRead: number; versionsWritten: number; webhooksWritten: number; refused: number },
  total: bigint,
  progressEveryMs: number,
): Promise<void> {
  const { kafka, registry, pool, log, progress } = deps;
  const groupId = `${snapshotsTopic}.rebuild.${randomBytes(4).toString('hex')}`;
  const position = new Map<string, bigint>();
  const remaining = () => [...ends].flatMap(([topic, parts]) => [...parts].filter(([p, end]) => end > 0n && (position.get(`${topic}:${p}`) ?? -1n) < end - 1n));
  let finish!: () => void;
  let fail!: (err: unknown) => void;
  const finished = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  if (remaining().length === 0) finish();

  const consumer = kafka.consumer({ groupId, maxBytesPerPartition: 4 * 1024 * 1024, maxBytes: 32 * 1024 * 1024, maxWaitTimeInMs: 500, readUncommitted: false });
  // Batch ends (including batches of only transaction markers, which never reach eachBatch) move the position.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    const key = `${payload.topic}:${payload.partition}`;
    const last = BigInt(payload.lastOffset);
    if (last > (position.get(key) ?? -1n)) position.set(key, last);
    if (remaining().length === 0) finish();
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) fail(payload.error);
  });
  const timer = setInterval(() => progress(`rebuild: ${stats.recordsRead}/${total} records read, ${stats.versionsWritten} versions and ${stats.webhooksWritten} webhooks written`), progressEveryMs);
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...ends.keys()], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 3,
      eachBatch: async ({ batch }) => {
        const end = ends.get(batch.topic)?.get(batch.partition) ?? 0n;
        const messages = batch.messages.filter((m) => BigInt(m.offset) < end);
        if (messages.length === 0) return;
        const kind = batch.topic === snapshotsTopic ? 'snapshots' : 'webhooks';
        const outcome = await retry(
          async () => {
            const decoded = await decodeBatch(registry, kind, batch.topic, batch.partition, messages, '');
            const written = await writeBatch(pool, schema, decoded.snapshots, decoded.webhooks);
            return { written, letters: decoded.letters.length };
          },
          { attempts: 12, maxDelayMs: 10_000, shouldRetry: (err) => classifyDatabaseError(err) === 'transient', onRetry: (err, attempt) => log.warn('rebuild batch failed, retrying', { attempt, err }) },
        ).catch((err: unknown) => {
          fail(err);
          throw err;
        });
        stats.recordsRead += messages.length;
        stats.versionsWritten += outcome.written.snapshotsWritten;
        stats.webhooksWritten += outcome.written.webhooksWritten;
        stats.refused += outcome.letters + outcome.written.refused.length;
      },
    });
    await finished;
    progress(`rebuild: ${stats.recordsRead}/${total} records read, ${stats.versionsWritten} versions and ${stats.webhooksWritten} webhooks written`);
  } finally {
    clearInterval(timer);
    await consumer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}

/**
 * Checks the fresh warehouse before it replaces the live one: it holds exactly the rows the
 * rebuild wrote, its versions are gap-free (or no worse than the live warehouse's, since the sink
 * writes a gap it is given and reports it), and every version and webhook of the live warehouse
 * is in it with the same content, so the swap can only add, never lose.
 */
async function verify(pool: pg.Pool, live: string, fresh: string, stats: { versionsWritten: number; webhooksWritten: number }) {
  const f = quoteIdent(fresh);
  const l = quoteIdent(live);
  const count = async (sql: string) => Number((await pool.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
  const versions = await count(`SELECT count(*) n FROM ${f}.resource_versions`);
  const webhooks = await count(`SELECT count(*) n FROM ${f}.webhook_events`);
  if (versions !== stats.versionsWritten || webhooks !== stats.webhooksWritten) {
    throw new Error(`rebuild verification failed: wrote ${stats.versionsWritten} versions and ${stats.webhooksWritten} webhooks, the schema holds ${versions} and ${webhooks}`);
  }
  const outOfSequence = (s: string) =>
    count(`SELECT count(*) n FROM (SELECT version, row_number() OVER (PARTITION BY resource_type, resource_id ORDER BY version) rn FROM ${s}.resource_versions) v WHERE version <> rn`);
  const freshGaps = await outOfSequence(f);
  const liveExists = (await pool.query(`SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'resource_versions'`, [live])).rowCount === 1;
  if (liveExists) {
    const missingVersions = await count(
      `SELECT count(*) n FROM ${l}.resource_versions o WHERE NOT EXISTS (SELECT 1 FROM ${f}.resource_versions n
          WHERE n.resource_type = o.resource_type AND n.resource_id = o.resource_id AND n.version = o.version AND n.content_hash = o.content_hash)`,
    );
    const missingWebhooks = await count(`SELECT count(*) n FROM ${l}.webhook_events o WHERE NOT EXISTS (SELECT 1 FROM ${f}.webhook_events n WHERE n.event_id = o.event_id)`);
    if (missingVersions > 0 || missingWebhooks > 0) {
      throw new UserError(`rebuild verification failed: ${missingVersions} versions and ${missingWebhooks} webhooks of the live warehouse are not in the log; the live warehouse was left as it is`);
    }
    const liveGaps = await outOfSequence(l);
    if (freshGaps > liveGaps) throw new UserError(`rebuild verification failed: ${freshGaps} versions out of sequence, the live warehouse has ${liveGaps}; the live warehouse was left as it is`);
  }
  return { versions, webhooks, outOfSequence: freshGaps };
}

/** Renames live -> <live>_replaced_<time> and fresh -> live in one transaction. */
async function swap(pool: pg.Pool, live: string, fresh: string): Promise<string | null> {
  return withClient(pool, (client) =>
    inTransaction(client, async () => {
      const exists = (await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [live])).rowCount === 1;
      const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
      const replaced = exists ? `${live.slice(0, 40)}_replaced_${stamp}` : null;
      // The dead letters are no part of the logs a rebuild reads: they move over, and the sink's
      // dead-letter group (whose offsets stay where they are) goes on from there.
      const hasLetters = exists && (await client.query(`SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'dead_letters'`, [live])).rowCount === 1;
      if (hasLetters) await client.query(`INSERT INTO ${quoteIdent(fresh)}.dead_letters SELECT * FROM ${quoteIdent(live)}.dead_letters ON CONFLICT DO NOTHING`);
      // The analyst's exchange rates (fx_rates, the MRR views' reference data) are in no log either.
      const hasRates = exists && (await client.query(`SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'fx_rates'`, [live])).rowCount === 1;
      if (hasRates) await client.query(`INSERT INTO ${quoteIdent(fresh)}.fx_rates SELECT * FROM ${quoteIdent(live)}.fx_rates ON CONFLICT DO NOTHING`);
      if (replaced) await client.query(`ALTER SCHEMA ${quoteIdent(live)} RENAME TO ${quoteIdent(replaced)}`);
      await client.query(`ALTER SCHEMA ${quoteIdent(fresh)} RENAME TO ${quoteIdent(live)}`);
      return replaced;
    }),
  );
}
