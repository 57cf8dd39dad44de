-- Where in <prefix>.webhooks each webhook row came from, as resource_versions keeps for
-- <prefix>.snapshots: after a point-in-time restore of the database, `billing-loader repair
-- sink-offsets` moves the sink's group back to the first offset of each partition the restored
-- warehouse does not hold (docs/OPERATIONS.md, "Backup and restore"). Nullable: rows written
-- before this migration have none (a partition with no located row is read again from its start).
ALTER TABLE webhook_events ADD COLUMN kafka_partition integer, ADD COLUMN kafka_offset bigint;
