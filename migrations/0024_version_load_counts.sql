-- pipeline_health's versions per minute, counted at write time. Since 0006 the view counted every
-- version of a range of minutes from the index on their minute of loaded_at: fast for a live load,
-- whose versions come at the rate the service sends webhooks, but a backfill appends versions as
-- fast as the sink writes (millions an hour), and the dashboard's last hours then read millions of
-- index entries to count them (docs/BENCHMARKS.md, "pipeline_health during a backfill").
--
-- 1. Each appended statement records its versions per UTC minute of loaded_at
--    (version_load_deltas, insert-only, so concurrent sinks never wait for each other's rows) and
--    folds what is recorded into one row per minute (version_load_minutes) when no other
--    transaction holds the fold, the same scheme as contract_state_deltas (0012).
-- 2. The index on the minute of loaded_at keeps only the versions with source events: the
--    freshness percentiles are taken over those alone (a version without source events has no
--    freshness), so a range of minutes reads as many index entries as webhooks caused versions. A
--    backfill's versions are no longer indexed at all.

CREATE TABLE version_load_minutes (
  minute   timestamptz NOT NULL PRIMARY KEY,
  versions bigint      NOT NULL
);
CREATE TABLE version_load_deltas (
  minute   timestamptz NOT NULL,
  versions bigint      NOT NULL
);

CREATE FUNCTION count_loaded_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO %I.version_load_deltas (minute, versions) SELECT date_trunc(%L, loaded_at, %L), count(*) FROM appended GROUP BY 1',
                 TG_TABLE_SCHEMA, 'minute', 'UTC');
  -- The fold: one transaction at a time (the others skip it rather than wait), the rows other
  -- transactions committed so far and this one's own.
  IF pg_try_advisory_xact_lock(format('%I.version_load_deltas', TG_TABLE_SCHEMA)::regclass::oid::bigint) THEN
    EXECUTE format($q$
      WITH moved AS (DELETE FROM %1$I.version_load_deltas RETURNING minute, versions)
      INSERT INTO %1$I.version_load_minutes AS m (minute, versions)
      SELECT minute, sum(versions) FROM moved GROUP BY 1 ORDER BY 1
      ON CONFLICT (minute) DO UPDATE SET versions = m.versions + EXCLUDED.versions$q$, TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END
$$;

-- Created before the fill: it takes resource_versions' lock until the migration commits, so no
-- version is appended between the fill and the trigger uncounted.
CREATE TRIGGER resource_versions_count_loaded AFTER INSERT ON resource_versions
  REFERENCING NEW TABLE AS appended FOR EACH STATEMENT EXECUTE FUNCTION count_loaded_versions();

-- The history so far, from 0006's index (an index-only scan in minute order).
INSERT INTO version_load_minutes (minute, versions)
SELECT date_trunc('minute', loaded_at, 'UTC'), count(*) FROM resource_versions GROUP BY 1;

CREATE INDEX resource_versions_sourced_loaded_minute ON resource_versions (date_trunc('minute', loaded_at, 'UTC')) INCLUDE (loaded_at, source_event_ids)
  WHERE cardinality(source_event_ids) > 0;

GRANT SELECT, INSERT, DELETE ON version_load_deltas TO billing_loader_writer;
GRANT SELECT, INSERT, UPDATE ON version_load_minutes TO billing_loader_writer;

-- Last: dropping an index locks out the table's readers until the commit, which follows at once.
-- The statements above let them read (appends wait).
DROP INDEX resource_versions_loaded_minute;
