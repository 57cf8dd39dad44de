import type pg from 'pg';
import { quoteIdent } from '../../src/db/pool.js';
import { asWriter } from './as-role.js';

/** One version to append directly to a warehouse; `body` null is a deletion. */
export interface AppendedVersion {
  type: string;
  id: string;
  version: number;
  /** fetched_at, an ISO timestamp. */
  at: string;
  body: Record<string, unknown> | null;
  /** source_event_ids: the webhooks that caused the read (none by default). */
  sources?: readonly string[];
}

/** One webhook to append directly to a warehouse, as the sink stores it. */
export interface AppendedWebhook {
  /** event_id, a UUID. */
  id: string;
  event: string;
  /** received_at, an ISO timestamp. */
  at: string;
  payload: Record<string, unknown>;
}

/**
 * Appends the versions in one INSERT statement, in a transaction of the writer role: like one
 * sink batch, the warehouse's triggers run once for all of them. Content hashes and offsets are
 * placeholders; `partition` is the kafka_partition recorded.
 */
export async function appendVersions(pool: pg.Pool, schema: string, versions: readonly AppendedVersion[], partition = 0): Promise<void> {
  await asWriter(pool, (client) => insertVersions(client, schema, versions, partition));
}

/** appendVersions' one INSERT statement, in the caller's transaction (which may look at what it did before committing). */
export async function insertVersions(client: pg.PoolClient, schema: string, versions: readonly AppendedVersion[], partition = 0): Promise<void> {
  await client.query(
    `INSERT INTO ${quoteIdent(schema)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset)
     SELECT t, id, v, at, b IS NULL, b, 'h' || ord, COALESCE(s::uuid[], '{}'), array_fill('Webhook'::text, ARRAY[cardinality(COALESCE(s::uuid[], '{}'))]), $6, ord
       FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::jsonb[], $7::text[]) WITH ORDINALITY AS x(t, id, v, at, b, s, ord)`,
    [
      versions.map((v) => v.type),
      versions.map((v) => v.id),
      versions.map((v) => v.version),
      versions.map((v) => v.at),
      versions.map((v) => (v.body === null ? null : JSON.stringify(v.body))),
      partition,
      versions.map((v) => `{${(v.sources ?? []).join(',')}}`),
    ],
  );
}

/** Appends the webhooks in one INSERT statement, in a transaction of the writer role, as one sink batch writes them. */
export async function appendWebhooks(pool: pg.Pool, schema: string, webhooks: readonly AppendedWebhook[]): Promise<void> {
  await asWriter(pool, (client) =>
    client.query(
      `INSERT INTO ${quoteIdent(schema)}.webhook_events (event_id, event, received_at, payload)
       SELECT id, event, at, payload FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::jsonb[]) AS x(id, event, at, payload)`,
      [webhooks.map((w) => w.id), webhooks.map((w) => w.event), webhooks.map((w) => w.at), webhooks.map((w) => JSON.stringify(w.payload))],
    ),
  );
}
