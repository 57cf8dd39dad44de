import type pg from 'pg';
import { inTransaction, quoteIdent, withClient } from '../db/pool.js';
import { errorMessage } from '../errors.js';
import { arrayLiteral, copyFrom, copyText } from '../warehouse/copy-from.js';
import { classifyDatabaseError } from '../errors.js';
import type { SnapshotRow, WebhookRow } from './records.js';
import { planVersions, resourceKey, versionKey, versionsToLookUp, type Head, type VersionPlan } from './version-plan.js';

/** A record the database refused (SQLSTATE class 22/23 on that row alone): it goes to the DLQ. */
export interface DatabaseRefusal {
  row: SnapshotRow | WebhookRow;
  errorClass: 'rejected-by-database' | 'duplicate-content' | 'version-conflict';
  message: string;
}

export interface BatchOutcome {
  snapshotsWritten: number;
  webhooksWritten: number;
  /** Snapshot records already stored with the same content (replays). */
  alreadyStored: number;
  gaps: VersionPlan['gaps'];
  lateFills: SnapshotRow[];
  refused: DatabaseRefusal[];
  /** True when a data error forced the row-by-row path. */
  isolated: boolean;
}

const SNAPSHOT_COLUMNS = 'resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset';

/**
 * Writes one batch in one transaction and commits it; the caller commits Kafka offsets only
 * after this resolves. Snapshots go in with COPY (the fastest path into PostgreSQL) after the
 * version plan has removed every row already stored, so a replay writes nothing; the primary key
 * still stands behind it, and a concurrent writer (a zombie sink after a rebalance) makes COPY
 * fail with 23505, which falls back to the row-by-row path with ON CONFLICT DO NOTHING.
 * Webhooks are a multi-row INSERT ... ON CONFLICT (event_id) DO NOTHING.
 *
 * A data error (class 22/23) anywhere in the fast path means one row is bad (e.g. a body
 * PostgreSQL's jsonb refuses, such as a \u0000 escape): the transaction is rolled back and the
 * batch written row by row, each row under a savepoint, the refused rows returned for the DLQ.
 * Any other error is thrown: the caller retries the whole batch, which is safe because it is
 * idempotent.
 */
export async function writeBatch(pool: pg.Pool, schema: string, snapshots: SnapshotRow[], webhooks: WebhookRow[]): Promise<BatchOutcome> {
  // A lost connection fails the query in flight (the caller retries) and destroys the client.
  return withClient(pool, async (client) => {
    try {
      return await inTransaction(client, async () => {
        const plan = await planBatch(client, schema, snapshots);
        const snapshotsWritten = plan.insert.length > 0 ? await copyFrom(client, `COPY ${quoteIdent(schema)}.resource_versions (${SNAPSHOT_COLUMNS}) FROM STDIN`, plan.insert.map(snapshotLine).join('')) : 0;
        const webhooksWritten = await insertWebhooks(client, schema, webhooks);
        return outcome(plan, snapshotsWritten, webhooksWritten, [], false);
      });
    } catch (err) {
      if (classifyDatabaseError(err) !== 'bad-record') throw err;
    }
    return await inTransaction(client, async () => {
      const plan = await planBatch(client, schema, snapshots);
      const refused: DatabaseRefusal[] = [];
      let snapshotsWritten = 0;
      let webhooksWritten = 0;
      for (const row of plan.insert) {
        const result = await oneRow(client, row, () => insertSnapshot(client, schema, row));
        if (typeof result === 'number') snapshotsWritten += result;
        else refused.push(result);
      }
      for (const row of webhooks) {
        const result = await oneRow(client, row, () => insertWebhooks(client, schema, [row]));
        if (typeof result === 'number') webhooksWritten += result;
        else refused.push(result);
      }
      return outcome(plan, snapshotsWritten, webhooksWritten, refused, true);
    });
  });
}

function outcome(plan: VersionPlan, snapshotsWritten: number, webhooksWritten: number, refused: DatabaseRefusal[], isolated: boolean): BatchOutcome {
  return {
    snapshotsWritten,
    webhooksWritten,
    alreadyStored: plan.alreadyStored,
    gaps: plan.gaps,
    lateFills: plan.lateFills,
    refused: [...plan.refused, ...refused],
    isolated,
  };
}

/** Runs one row's insert under a savepoint; a data error refuses that row only. */
async function oneRow(client: pg.PoolClient, row: SnapshotRow | WebhookRow, insert: () => Promise<number>): Promise<DatabaseRefusal | number> {
  await client.query('SAVEPOINT one_row');
  try {
    const written = await insert();
    await client.query('RELEASE SAVEPOINT one_row');
    return written;
  } catch (err) {
    if (classifyDatabaseError(err) !== 'bad-record') throw err;
    await client.query('ROLLBACK TO SAVEPOINT one_row');
    return { row, errorClass: 'rejected-by-database', message: `${errorMessage(err)} (SQLSTATE ${(err as { code?: string }).code ?? '?'})` };
  }
}

/** Reads the heads (and, for replayed versions, the stored hashes) the version plan needs. */
async function planBatch(client: pg.PoolClient, schema: string, rows: SnapshotRow[]): Promise<VersionPlan> {
  if (rows.length === 0) return planVersions(rows, new Map(), new Map());
  const table = `${quoteIdent(schema)}.resource_versions`;
  const keys = new Map<string, [string, string]>();
  for (const r of rows) keys.set(resourceKey(r.resourceType, r.resourceId), [r.resourceType, r.resourceId]);
  const types = [...keys.values()].map((k) => k[0]);
  const ids = [...keys.values()].map((k) => k[1]);
  const headRows = await client.query<{ t: string; id: string; version: number; content_hash: string }>(
    `SELECT k.t, k.id, h.version, h.content_hash
       FROM unnest($1::text[], $2::text[]) AS k(t, id)
       CROSS JOIN LATERAL (SELECT version, content_hash FROM ${table} r
                            WHERE r.resource_type = k.t AND r.resource_id = k.id
                            ORDER BY version DESC LIMIT 1) h`,
    [types, ids],
  );
  const heads = new Map<string, Head>(headRows.rows.map((h) => [resourceKey(h.t, h.id), { version: h.version, contentHash: h.content_hash }]));
  const stored = new Map<string, string>();
  const older = versionsToLookUp(rows, heads);
  if (older.length > 0) {
    const found = await client.query<{ resource_type: string; resource_id: string; version: number; content_hash: string }>(
      `SELECT r.resource_type, r.resource_id, r.version, r.content_hash
         FROM unnest($1::text[], $2::text[], $3::int[]) AS k(t, id, v)
         JOIN ${table} r ON r.resource_type = k.t AND r.resource_id = k.id AND r.version = k.v`,
      [older.map((r) => r.resourceType), older.map((r) => r.resourceId), older.map((r) => r.version)],
    );
    for (const f of found.rows) stored.set(versionKey(f.resource_type, f.resource_id, f.version), f.content_hash);
  }
  return planVersions(rows, heads, stored);
}

/** One row of COPY text: the columns of SNAPSHOT_COLUMNS, tab-separated. */
export function snapshotLine(r: SnapshotRow): string {
  return (
    [
      copyText(r.resourceType),
      copyText(r.resourceId),
      String(r.version),
      new Date(r.fetchedAtMs).toISOString(),
      r.deleted ? 't' : 'f',
      copyText(r.body),
      copyText(r.contentHash),
      copyText(arrayLiteral(r.sourceEventIds)),
      copyText(arrayLiteral(r.sourceEvents)),
      copyText(r.customerId),
      String(r.coordinates.partition),
      r.coordinates.offset,
    ].join('\t') + '\n'
  );
}

async function insertSnapshot(client: pg.PoolClient, schema: string, r: SnapshotRow): Promise<number> {
  const result = await client.query(
    `INSERT INTO ${quoteIdent(schema)}.resource_versions (${SNAPSHOT_COLUMNS})
     VALUES ($1, $2, $3, $4::timestamptz, $5, $6::jsonb, $7, $8::uuid[], $9::text[], $10, $11, $12)
     ON CONFLICT DO NOTHING`,
    [r.resourceType, r.resourceId, r.version, new Date(r.fetchedAtMs).toISOString(), r.deleted, r.body, r.contentHash, r.sourceEventIds, r.sourceEvents, r.customerId, r.coordinates.partition, r.coordinates.offset],
  );
  return result.rowCount ?? 0;
}

async function insertWebhooks(client: pg.PoolClient, schema: string, rows: WebhookRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await client.query(
    `INSERT INTO ${quoteIdent(schema)}.webhook_events (event_id, event, received_at, payload, entity_id, retry_count, kafka_partition, kafka_offset)
     SELECT id, event, received_at, body::jsonb, entity_id, retry_count, kafka_partition, kafka_offset
       FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::int[], $7::int[], $8::bigint[]) AS w(id, event, received_at, body, entity_id, retry_count, kafka_partition, kafka_offset)
     ON CONFLICT (event_id) DO NOTHING`,
    [
      rows.map((r) => r.eventId),
      rows.map((r) => r.event),
      rows.map((r) => new Date(r.receivedAtMs).toISOString()),
      rows.map((r) => r.body),
      rows.map((r) => r.entityId),
      rows.map((r) => r.retryCount),
      // Where the row came from in <prefix>.webhooks: what a rewind after a database restore starts from.
      rows.map((r) => r.coordinates.partition),
      rows.map((r) => r.coordinates.offset),
    ],
  );
  return result.rowCount ?? 0;
}
