-- When each version landed in the warehouse (the sink's insert time), beside fetched_at (when
-- the state was read from the billing API). For lineage questions ("what arrived late?") and for
-- measuring freshness (webhook received_at → loaded_at). It describes the load, not the
-- history: a rebuild from the snapshot log gives new load times and the same history. It is
-- not part of the public views, whose columns are docs/CONTRACT.md's.
ALTER TABLE resource_versions ADD COLUMN loaded_at timestamptz NOT NULL DEFAULT clock_timestamp();
