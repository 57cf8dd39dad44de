/**
 * The value of a `<prefix>.snapshots` record before Avro encoding (schemas/resource-snapshot.avsc):
 * the contract between the enricher, which writes it, and the sink, which reads it.
 */
export interface SnapshotRecord {
  resource_type: string;
  resource_id: string;
  version: number;
  /** ms since the epoch (timestamp-millis). */
  fetched_at: number;
  deleted: boolean;
  content_hash: string;
  body: string | null;
  source_event_ids: string[];
  source_events: string[];
  sources: { topic: string; partition: number; offset: number }[];
}
