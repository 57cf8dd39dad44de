-- The write path's share of the analyst layer, made smaller (docs/WAREHOUSE.md, "What is stored
-- and what is computed"; figures in docs/BENCHMARKS.md, Warehouse).
--
-- 1. One table of heads. current_facts (0010) holds each resource's latest version with the same
--    key, version, time and deleted flag as resource_heads (0004), kept by the same kind of
--    version-guarded upsert. Two tables meant two upserts per appended statement for one fact.
--    resource_heads becomes a view of current_facts, under its name and columns.
-- 2. The previous head's valid_to from current_facts. When a statement appends versions above a
--    resource's stored head (every in-order append), the only stored row whose valid_to changes is
--    that head, and current_facts names it: one update by primary key, in the statement that writes
--    the new facts. Only a resource whose first appended version lies below its head (a late record
--    filling a gap) takes the general recomputation of 0005.
-- 3. The fields by key name: the matching keys are found among the body's keys alone and their
--    values read by name, rather than every value copied out by jsonb_each. Same result.
-- 4. Contracts by status and plan at any moment, without reading the versions of the moments
--    before it: each appended statement records what it changes in those counts, per UTC day
--    (contract_state_deltas), and folds what has been recorded into one row per day, status and
--    plan (contract_state_days). contract_counts_as_of(at) adds up the days before `at` and the
--    versions of `at`'s own day. docs/WAREHOUSE.md, "Contracts counted at a moment".

CREATE OR REPLACE VIEW resource_latest AS
SELECT resource_type, resource_id, version, valid_from, deleted FROM current_facts;

DROP TRIGGER resource_versions_advance_heads ON resource_versions;
DROP FUNCTION advance_resource_heads();
DROP TABLE resource_heads;
CREATE VIEW resource_heads AS
SELECT resource_type, resource_id, version, valid_from AS fetched_at, deleted FROM current_facts;
GRANT SELECT ON resource_heads TO billing_loader_writer;

-- A contract version counts from its valid_from to its valid_to under its status and plan (the
-- body's LifecycleStatus and PlanId as JSON values, JSON null when missing, as the metric views
-- read them); deleted versions do not count. So the count of a (status, plan) at a moment is the
-- sum of +1 at each such valid_from and -1 at each such valid_to up to that moment. Per UTC day:
CREATE TABLE contract_state_days (
  day     date   NOT NULL,
  status  jsonb  NOT NULL,
  plan_id jsonb  NOT NULL,
  delta   bigint NOT NULL,
  PRIMARY KEY (day, status, plan_id)
);
-- What appended statements recorded and no statement has folded into contract_state_days yet.
-- Insert-only for the appending transactions, so concurrent sinks never wait for each other's
-- rows; whichever transaction holds the fold's advisory lock moves the committed rows over.
CREATE TABLE contract_state_deltas (
  day     date   NOT NULL,
  status  jsonb  NOT NULL,
  plan_id jsonb  NOT NULL,
  delta   bigint NOT NULL
);

-- The two keys a contract version counts under, in one place for the trigger, the fill and the
-- reader (inlined where they are called).
CREATE FUNCTION contract_state_status(fields jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN COALESCE(fields -> 'lifecyclestatus', 'null');
CREATE FUNCTION contract_state_plan(fields jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN COALESCE(fields -> 'planid', 'null');

-- The per-day sums from version_facts: the fill below, `migrate` after it re-extracts contract
-- fields, and the benchmark's generated warehouses.
CREATE FUNCTION contract_state_days_from_facts()
RETURNS TABLE (day date, status jsonb, plan_id jsonb, delta bigint)
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT d.day, d.status, d.plan_id, sum(d.delta)::bigint
    FROM (SELECT (f.valid_from AT TIME ZONE 'UTC')::date AS day, contract_state_status(f.fields) AS status,
                 contract_state_plan(f.fields) AS plan_id, 1 AS delta
            FROM version_facts f
           WHERE f.resource_type = 'Contract' AND NOT f.deleted
          UNION ALL
          SELECT (f.valid_to AT TIME ZONE 'UTC')::date, contract_state_status(f.fields), contract_state_plan(f.fields), -1
            FROM version_facts f
           WHERE f.resource_type = 'Contract' AND NOT f.deleted AND f.valid_to IS NOT NULL) d
   GROUP BY 1, 2, 3
  HAVING sum(d.delta) <> 0;
END;

INSERT INTO contract_state_days (day, status, plan_id, delta) SELECT * FROM contract_state_days_from_facts();

CREATE OR REPLACE FUNCTION append_version_facts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  late boolean;
  contracts boolean;
BEGIN
  -- Every CTE reads the snapshot from before the statement: `heads` is current_facts before the
  -- upsert below, and the UPDATE touches only rows of earlier statements.
  EXECUTE format($q$
    WITH firsts AS (
      SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version AS lo, fetched_at
        FROM appended
       ORDER BY resource_type, resource_id, version),
    heads AS (
      SELECT f.resource_type, f.resource_id, f.lo, f.fetched_at, c.version, c.deleted, c.fields
        FROM firsts f JOIN %1$I.current_facts c USING (resource_type, resource_id)),
    closed AS (
      UPDATE %1$I.version_facts v SET valid_to = h.fetched_at
        FROM heads h
       WHERE h.lo > h.version
         AND v.resource_type = h.resource_type AND v.resource_id = h.resource_id AND v.version = h.version),
    written AS (
      INSERT INTO %1$I.version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted, fields)
      SELECT a.resource_type, a.resource_id, a.version, a.fetched_at,
             lead(a.fetched_at) OVER (PARTITION BY a.resource_type, a.resource_id ORDER BY a.version),
             a.deleted, x.fields
        FROM appended a
        LEFT JOIN %1$I.version_facts_keys k ON k.resource_type = a.resource_type
        LEFT JOIN LATERAL (SELECT jsonb_object_agg(lower(e.key), a.body -> e.key ORDER BY e.key DESC) AS fields
                             FROM jsonb_object_keys(CASE WHEN k.keys IS NOT NULL AND jsonb_typeof(a.body) = 'object' THEN a.body END) AS e(key)
                            WHERE lower(e.key) = ANY (k.keys)) x ON true
      RETURNING resource_type, resource_id, version, valid_from, valid_to, deleted, fields),
    advanced AS (
      INSERT INTO %1$I.current_facts AS c (resource_type, resource_id, version, valid_from, deleted, fields)
      SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version, valid_from, deleted, fields
        FROM written
       ORDER BY resource_type, resource_id, version DESC
      ON CONFLICT (resource_type, resource_id) DO UPDATE
         SET version = EXCLUDED.version, valid_from = EXCLUDED.valid_from, deleted = EXCLUDED.deleted, fields = EXCLUDED.fields
       WHERE c.version < EXCLUDED.version),
    counted AS (
      -- Each appended contract version counts from its valid_from to the valid_to written above;
      -- a closed head stops counting where the first appended version starts.
      INSERT INTO %1$I.contract_state_deltas (day, status, plan_id, delta)
      SELECT d.day, d.status, d.plan_id, sum(d.delta)
        FROM (SELECT (w.valid_from AT TIME ZONE 'UTC')::date AS day, %1$I.contract_state_status(w.fields) AS status,
                     %1$I.contract_state_plan(w.fields) AS plan_id, 1 AS delta
                FROM written w WHERE w.resource_type = 'Contract' AND NOT w.deleted
              UNION ALL
              SELECT (w.valid_to AT TIME ZONE 'UTC')::date, %1$I.contract_state_status(w.fields), %1$I.contract_state_plan(w.fields), -1
                FROM written w WHERE w.resource_type = 'Contract' AND NOT w.deleted AND w.valid_to IS NOT NULL
              UNION ALL
              SELECT (h.fetched_at AT TIME ZONE 'UTC')::date, %1$I.contract_state_status(h.fields), %1$I.contract_state_plan(h.fields), -1
                FROM heads h WHERE h.resource_type = 'Contract' AND h.lo > h.version AND NOT h.deleted) d
       GROUP BY 1, 2, 3
      HAVING sum(d.delta) <> 0)
    SELECT EXISTS (SELECT FROM heads WHERE lo < version), EXISTS (SELECT FROM appended WHERE resource_type = 'Contract')$q$, TG_TABLE_SCHEMA)
  INTO late, contracts;
  IF late THEN
    -- 0005's recomputation, for the resources a late record reached: closes the version stored
    -- before the first appended one and recomputes every valid_to after it. Each valid_to it
    -- moves moves that version's end in the counts.
    EXECUTE format($q$
      WITH changed AS (
        UPDATE %1$I.version_facts f
           SET valid_to = x.valid_to
          FROM (SELECT v.resource_type, v.resource_id, v.version, v.valid_to AS old_to,
                       lead(v.valid_from) OVER (PARTITION BY v.resource_type, v.resource_id ORDER BY v.version) AS valid_to
                  FROM (SELECT a.resource_type, a.resource_id, min(a.version) AS lo FROM appended a
                         GROUP BY 1, 2
                        HAVING min(a.version) < (SELECT c.version FROM %1$I.current_facts c
                                                  WHERE c.resource_type = a.resource_type AND c.resource_id = a.resource_id)) a
                  CROSS JOIN LATERAL (SELECT max(p.version) AS version FROM %1$I.version_facts p
                                       WHERE p.resource_type = a.resource_type AND p.resource_id = a.resource_id AND p.version < a.lo) prev
                  JOIN %1$I.version_facts v ON v.resource_type = a.resource_type AND v.resource_id = a.resource_id
                                           AND v.version >= COALESCE(prev.version, a.lo)) x
         WHERE f.resource_type = x.resource_type AND f.resource_id = x.resource_id AND f.version = x.version
           AND f.valid_to IS DISTINCT FROM x.valid_to
        RETURNING f.resource_type, f.deleted, f.fields, x.old_to, f.valid_to AS new_to)
      INSERT INTO %1$I.contract_state_deltas (day, status, plan_id, delta)
      SELECT d.day, d.status, d.plan_id, sum(d.delta)
        FROM (SELECT (c.old_to AT TIME ZONE 'UTC')::date AS day, %1$I.contract_state_status(c.fields) AS status,
                     %1$I.contract_state_plan(c.fields) AS plan_id, 1 AS delta
                FROM changed c WHERE c.resource_type = 'Contract' AND NOT c.deleted AND c.old_to IS NOT NULL
              UNION ALL
              SELECT (c.new_to AT TIME ZONE 'UTC')::date, %1$I.contract_state_status(c.fields), %1$I.contract_state_plan(c.fields), -1
                FROM changed c WHERE c.resource_type = 'Contract' AND NOT c.deleted AND c.new_to IS NOT NULL) d
       GROUP BY 1, 2, 3
      HAVING sum(d.delta) <> 0$q$, TG_TABLE_SCHEMA);
  END IF;
  -- The fold: one transaction at a time (the others skip it rather than wait), the rows other
  -- transactions committed so far and this one's own. Keeps contract_state_deltas a few
  -- statements long, so a count reads about one row per day, status and plan.
  IF contracts AND pg_try_advisory_xact_lock(format('%I.contract_state_deltas', TG_TABLE_SCHEMA)::regclass::oid::bigint) THEN
    EXECUTE format($q$
      WITH moved AS (DELETE FROM %1$I.contract_state_deltas RETURNING day, status, plan_id, delta)
      INSERT INTO %1$I.contract_state_days AS s (day, status, plan_id, delta)
      SELECT day, status, plan_id, sum(delta) FROM moved GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (day, status, plan_id) DO UPDATE SET delta = s.delta + EXCLUDED.delta$q$, TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END
$$;

-- Contracts by status and plan at a moment (what SELECT status, plan_id, count(*) FROM
-- contract_as_of(at) GROUP BY 1, 2 gives), from the counts: the days before `at`'s UTC day, then
-- the versions that start or end on that day up to `at` (index ranges on version_facts). Security
-- definer, because it reads tables the analyst role may not; its body names every object it
-- reads (bound when created), so no search_path can redirect it.
CREATE FUNCTION contract_counts_as_of("at" timestamptz)
RETURNS TABLE (status text, plan_id text, contracts bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  SELECT wh_as_text(c.status), wh_as_text(c.plan_id), sum(c.delta)::bigint
    FROM (SELECT d.status, d.plan_id, d.delta FROM contract_state_days d
           WHERE d.day < (LEAST("at", '294276-12-31 23:59:59.999999+00') AT TIME ZONE 'UTC')::date
          UNION ALL
          SELECT d.status, d.plan_id, d.delta FROM contract_state_deltas d
           WHERE d.day < (LEAST("at", '294276-12-31 23:59:59.999999+00') AT TIME ZONE 'UTC')::date
          UNION ALL
          SELECT contract_state_status(f.fields), contract_state_plan(f.fields), 1
            FROM version_facts f
           WHERE f.resource_type = 'Contract' AND NOT f.deleted
             AND f.valid_from >= date_trunc('day', "at", 'UTC') AND f.valid_from <= "at"
          UNION ALL
          SELECT contract_state_status(f.fields), contract_state_plan(f.fields), -1
            FROM version_facts f
           WHERE f.resource_type = 'Contract' AND NOT f.deleted AND f.valid_to IS NOT NULL
             AND COALESCE(f.valid_to, 'infinity') >= date_trunc('day', "at", 'UTC') AND COALESCE(f.valid_to, 'infinity') <= "at") c
   GROUP BY 1, 2
  HAVING sum(c.delta) <> 0;
END;
REVOKE EXECUTE ON FUNCTION contract_counts_as_of(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION contract_counts_as_of(timestamptz) TO billing_loader_analyst, billing_loader_writer;
REVOKE EXECUTE ON FUNCTION contract_state_days_from_facts() FROM PUBLIC;

-- The trigger runs as the role that appends: the writer records and folds.
GRANT SELECT, INSERT, DELETE ON contract_state_deltas TO billing_loader_writer;
GRANT SELECT, INSERT, UPDATE ON contract_state_days TO billing_loader_writer;
