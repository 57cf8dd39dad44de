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
-- 3. The counts are kept per resource type, with the latest loaded_at of each minute and type, so
--    that latest_loaded_at(type) answers "when was a version of this type last loaded" by an
--    index: dbt's source freshness (analytics/dbt) asked it as max(loaded_at) of a whole history
--    view, 4.5 s for the contracts of a warehouse of 10,000,000 versions.

CREATE TABLE version_load_minutes (
  minute         timestamptz NOT NULL,
  resource_type  text        NOT NULL,
  versions       bigint      NOT NULL,
  last_loaded_at timestamptz NOT NULL,
  PRIMARY KEY (minute, resource_type)
);
CREATE INDEX version_load_minutes_type_latest ON version_load_minutes (resource_type, last_loaded_at);
CREATE TABLE version_load_deltas (
  minute         timestamptz NOT NULL,
  resource_type  text        NOT NULL,
  versions       bigint      NOT NULL,
  last_loaded_at timestamptz NOT NULL
);

CREATE FUNCTION count_loaded_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO %I.version_load_deltas (minute, resource_type, versions, last_loaded_at)
                  SELECT date_trunc(%L, loaded_at, %L), resource_type, count(*), max(loaded_at) FROM appended GROUP BY 1, 2',
                 TG_TABLE_SCHEMA, 'minute', 'UTC');
  -- The fold: one transaction at a time (the others skip it rather than wait), the rows other
  -- transactions committed so far and this one's own.
  IF pg_try_advisory_xact_lock(format('%I.version_load_deltas', TG_TABLE_SCHEMA)::regclass::oid::bigint) THEN
    EXECUTE format($q$
      WITH moved AS (DELETE FROM %1$I.version_load_deltas RETURNING minute, resource_type, versions, last_loaded_at)
      INSERT INTO %1$I.version_load_minutes AS m (minute, resource_type, versions, last_loaded_at)
      SELECT minute, resource_type, sum(versions), max(last_loaded_at) FROM moved GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (minute, resource_type) DO UPDATE
         SET versions = m.versions + EXCLUDED.versions, last_loaded_at = GREATEST(m.last_loaded_at, EXCLUDED.last_loaded_at)$q$, TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END
$$;

-- Created before the fill: it takes resource_versions' lock until the migration commits, so no
-- version is appended between the fill and the trigger uncounted.
CREATE TRIGGER resource_versions_count_loaded AFTER INSERT ON resource_versions
  REFERENCING NEW TABLE AS appended FOR EACH STATEMENT EXECUTE FUNCTION count_loaded_versions();

-- The history so far: one pass over the versions (without their bodies).
INSERT INTO version_load_minutes (minute, resource_type, versions, last_loaded_at)
SELECT date_trunc('minute', loaded_at, 'UTC'), resource_type, count(*), max(loaded_at) FROM resource_versions GROUP BY 1, 2;

-- When a version of `resource_type` was last loaded (NULL: never), from the latest entry of the
-- type in the index above and the few deltas not folded yet. Security definer, because the
-- analyst role may not read the tables; its body names every object it reads (bound when
-- created), so no search_path can redirect it.
CREATE FUNCTION latest_loaded_at(resource_type text) RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  SELECT GREATEST((SELECT max(m.last_loaded_at) FROM version_load_minutes m WHERE m.resource_type = latest_loaded_at.resource_type),
                  (SELECT max(d.last_loaded_at) FROM version_load_deltas d WHERE d.resource_type = latest_loaded_at.resource_type));
END;
REVOKE EXECUTE ON FUNCTION latest_loaded_at(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION latest_loaded_at(text) TO billing_loader_analyst, billing_loader_writer;

CREATE INDEX resource_versions_sourced_loaded_minute ON resource_versions (date_trunc('minute', loaded_at, 'UTC')) INCLUDE (loaded_at, source_event_ids)
  WHERE cardinality(source_event_ids) > 0;

GRANT SELECT, INSERT, DELETE ON version_load_deltas TO billing_loader_writer;
GRANT SELECT, INSERT, UPDATE ON version_load_minutes TO billing_loader_writer;

-- Last: dropping an index locks out the table's readers until the commit, which follows at once.
-- The statements above let them read (appends wait).
DROP INDEX resource_versions_loaded_minute;
