import type pg from 'pg';
import { quoteIdent } from '../../src/db/pool.js';
import { WRITER_ROLE } from '../../src/warehouse/resource-types.js';

/** One version to append directly to a warehouse; `body` null is a deletion. */
export interface AppendedVersion {
  type: string;
  id: string;
  version: number;
  /** fetched_at, an ISO timestamp. */
  at: string;
  body: Record<string, unknown> | null;
}

/**
 * Appends the versions in one INSERT statement, in a transaction of the writer role: like one
 * sink batch, the warehouse's triggers run once for all of them. Content hashes and offsets are
 * placeholders; `partition` is the kafka_partition recorded.
 */
export async function appendVersions(pool: pg.Pool, schema: string, versions: readonly AppendedVersion[], partition = 0): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
    await client.query(
      `INSERT INTO ${quoteIdent(schema)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset)
       SELECT t, id, v, at, b IS NULL, b, 'h' || ord, '{}', '{}', $6, ord
         FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::jsonb[]) WITH ORDINALITY AS x(t, id, v, at, b, ord)`,
      [versions.map((v) => v.type), versions.map((v) => v.id), versions.map((v) => v.version), versions.map((v) => v.at), versions.map((v) => (v.body === null ? null : JSON.stringify(v.body))), partition],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
