-- Each version's facts are written once. Until now version_facts held every version, the latest
-- of each resource too, with valid_to NULL, and an appended version closed its resource's
-- previous head by updating that row. valid_to is indexed (0005's valid_from index includes it,
-- 0011's is on it), so the update could never be HOT: every closed head was a second row version
-- with an entry in each of the facts' indexes, the largest part of what the facts cost the sink
-- after reading the fields out of the bodies (docs/BENCHMARKS.md, "The sink against plain COPY").
--
-- current_facts (0010) already holds each resource's latest version with its fields. So:
-- 1. The table keeps only the closed versions, those a later version follows, and is renamed
--    closed_version_facts; each row is written once, by INSERT, when its version is closed.
-- 2. version_facts becomes a view: closed_version_facts, and current_facts with valid_to NULL.
--    Every reader keeps its name and its columns; PostgreSQL pushes a reader's conditions into
--    both parts and reads each through its own indexes.
-- 3. The trigger moves a head that an appended version follows from current_facts into
--    closed_version_facts, and writes an appended version there only once a later one follows it;
--    the latest goes to current_facts alone.
--
-- The analyst views and functions and the metric views are bound to the table they were created
-- on, so they are dropped here and created again on the view by the same `migrate`, right after
-- this file (src/warehouse/migrate-derived.ts). 0012's two functions are bound the same way and
-- are created again below, unchanged. A view of another schema over them stops the migration
-- before anything is dropped.

ALTER TABLE version_facts RENAME TO closed_version_facts;
ALTER INDEX version_facts_pkey RENAME TO closed_version_facts_pkey;
ALTER INDEX version_facts_valid_from RENAME TO closed_version_facts_valid_from;
ALTER INDEX version_facts_valid_to RENAME TO closed_version_facts_valid_to;
ALTER INDEX version_facts_contract_ends RENAME TO closed_version_facts_contract_ends;

DO $$
DECLARE
  o text;
BEGIN
  -- What depends on the table, directly or through each other: views (their rewrite rules) and
  -- SQL-standard functions. Only this schema's derived objects may go: a view of another schema
  -- over them (a dbt model built as a view, say) would be dropped with them, so the migration
  -- stops and names it instead, as migrate does when a view it re-creates has dependents.
  WITH RECURSIVE bound(cls, oid) AS (
    SELECT 'pg_class'::regclass, 'closed_version_facts'::regclass::oid
    UNION
    SELECT CASE WHEN d.classid = 'pg_rewrite'::regclass THEN 'pg_class'::regclass ELSE 'pg_proc'::regclass END,
           COALESCE(r.ev_class, d.objid)
      FROM bound b
      JOIN pg_depend d ON d.refclassid = b.cls AND d.refobjid = b.oid AND d.deptype = 'n'
                      AND d.classid IN ('pg_rewrite'::regclass, 'pg_proc'::regclass)
      LEFT JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
  )
  SELECT string_agg(COALESCE(c.oid::regclass::text, p.oid::regprocedure::text), ', ') INTO o
    FROM bound b
    LEFT JOIN pg_class c ON b.cls = 'pg_class'::regclass AND c.oid = b.oid
    LEFT JOIN pg_proc p ON b.cls = 'pg_proc'::regclass AND p.oid = b.oid
   WHERE COALESCE(c.relnamespace, p.pronamespace) <> current_schema()::regnamespace;
  IF o IS NOT NULL THEN
    RAISE EXCEPTION 'migration 0025 re-creates the warehouse''s views, and these objects of other schemas depend on them: %', o
      USING HINT = 'Drop them, run migrate again, then create them again.';
  END IF;
  -- One at a time: a CASCADE may drop the next one listed.
  LOOP
    SELECT format('DROP VIEW %s CASCADE', r.ev_class::regclass) INTO o
      FROM pg_depend d JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
     WHERE d.refobjid = 'closed_version_facts'::regclass AND r.ev_class <> 'closed_version_facts'::regclass
     LIMIT 1;
    EXIT WHEN o IS NULL;
    EXECUTE o;
  END LOOP;
  LOOP
    SELECT format('DROP FUNCTION %s CASCADE', d.objid::regprocedure) INTO o
      FROM pg_depend d
     WHERE d.classid = 'pg_proc'::regclass AND d.refobjid = 'closed_version_facts'::regclass
     LIMIT 1;
    EXIT WHEN o IS NULL;
    EXECUTE o;
  END LOOP;
END
$$;

-- The heads: each is current_facts' row of its resource.
DELETE FROM closed_version_facts WHERE valid_to IS NULL;

CREATE VIEW version_facts AS
SELECT resource_type, resource_id, version, valid_from, valid_to, deleted, fields FROM closed_version_facts
UNION ALL
SELECT resource_type, resource_id, version, valid_from, NULL::timestamptz, deleted, fields FROM current_facts;
GRANT SELECT ON version_facts TO billing_loader_writer;

-- The latest versions by valid_from, for what closed_version_facts' valid_from and valid_to indexes
-- served for them: the versions begun in a range (<t>_changes over a month, contract_counts_as_of's
-- day of `at`) and, counted without reading a row, those begun by a moment (<t>_as_of). resource_id
-- and version are included for the reason 0011 gives.
CREATE INDEX current_facts_valid_from ON current_facts (resource_type, valid_from) INCLUDE (deleted, resource_id, version);

-- metric_contract_transitions lists the contracts with an EndDate or an Ended status by
-- closed_version_facts_contract_ends; the latest versions need the same index. The predicate is the
-- view's, word for word.
CREATE INDEX current_facts_contract_ends ON current_facts (resource_id)
 WHERE resource_type = 'Contract'
   AND (jsonb_typeof(fields -> 'enddate') = 'string' OR lower(fields ->> 'lifecyclestatus') = 'ended');

-- 0012's, bound again, now to the view.
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
REVOKE EXECUTE ON FUNCTION contract_state_days_from_facts() FROM PUBLIC;

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

-- 0023's function. The head an appended version follows moves from current_facts to
-- closed_version_facts (an INSERT; before, an UPDATE of its row's valid_to); the appended versions
-- a later one follows are written there, and each resource's latest to current_facts only.
CREATE OR REPLACE FUNCTION append_version_facts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  late boolean;
  contracts boolean;
BEGIN
  -- Every CTE reads the snapshot from before the statement: `heads` is current_facts before the
  -- upsert below.
  EXECUTE format($q$
    WITH firsts AS (
      SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version AS lo, fetched_at,
             max(version) OVER (PARTITION BY resource_type, resource_id) AS hi
        FROM appended
       ORDER BY resource_type, resource_id, version),
    heads AS (
      SELECT f.resource_type, f.resource_id, f.lo, f.hi, f.fetched_at, c.version, c.valid_from, c.deleted, c.fields
        FROM firsts f JOIN %1$I.current_facts c USING (resource_type, resource_id)),
    facts AS (
      SELECT a.resource_type, a.resource_id, a.version, a.fetched_at AS valid_from,
             lead(a.fetched_at) OVER (PARTITION BY a.resource_type, a.resource_id ORDER BY a.version) AS valid_to,
             a.deleted, x.fields
        FROM appended a
        LEFT JOIN %1$I.version_facts_keys k ON k.resource_type = a.resource_type
        LEFT JOIN LATERAL (SELECT jsonb_object_agg(lower(e.key COLLATE "C"), e.value ORDER BY e.key COLLATE "C" DESC) AS fields
                             FROM jsonb_each(CASE WHEN k.keys IS NOT NULL AND jsonb_typeof(a.body) = 'object' THEN a.body END) AS e
                            WHERE lower(e.key COLLATE "C") = ANY (k.keys)) x ON true),
    closed AS (
      -- A head that an appended version follows, closed where the first appended version starts.
      -- When an appended version also comes before it (a late record), valid_to is left to the
      -- recomputation below, as for every version that record reaches.
      INSERT INTO %1$I.closed_version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted, fields)
      SELECT resource_type, resource_id, version, valid_from, CASE WHEN lo > version THEN fetched_at END, deleted, fields
        FROM heads
       WHERE hi > version),
    written AS (
      -- Every appended version but each resource's latest, when it is later than the stored head.
      INSERT INTO %1$I.closed_version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted, fields)
      SELECT f.resource_type, f.resource_id, f.version, f.valid_from, f.valid_to, f.deleted, f.fields
        FROM facts f LEFT JOIN heads h USING (resource_type, resource_id)
       WHERE f.valid_to IS NOT NULL OR f.version < h.version),
    advanced AS (
      INSERT INTO %1$I.current_facts AS c (resource_type, resource_id, version, valid_from, deleted, fields)
      SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version, valid_from, deleted, fields
        FROM facts
       ORDER BY resource_type, resource_id, version DESC
      ON CONFLICT (resource_type, resource_id) DO UPDATE
         SET version = EXCLUDED.version, valid_from = EXCLUDED.valid_from, deleted = EXCLUDED.deleted, fields = EXCLUDED.fields
       WHERE c.version < EXCLUDED.version),
    counted AS (
      -- Each appended contract version counts from its valid_from to the valid_to written above;
      -- a closed head stops counting where the first appended version starts.
      INSERT INTO %1$I.contract_state_deltas (day, status, plan_id, delta)
      SELECT d.day, d.status, d.plan_id, sum(d.delta)
        FROM (SELECT (f.valid_from AT TIME ZONE 'UTC')::date AS day, %1$I.contract_state_status(f.fields) AS status,
                     %1$I.contract_state_plan(f.fields) AS plan_id, 1 AS delta
                FROM facts f WHERE f.resource_type = 'Contract' AND NOT f.deleted
              UNION ALL
              SELECT (f.valid_to AT TIME ZONE 'UTC')::date, %1$I.contract_state_status(f.fields), %1$I.contract_state_plan(f.fields), -1
                FROM facts f WHERE f.resource_type = 'Contract' AND NOT f.deleted AND f.valid_to IS NOT NULL
              UNION ALL
              SELECT (h.fetched_at AT TIME ZONE 'UTC')::date, %1$I.contract_state_status(h.fields), %1$I.contract_state_plan(h.fields), -1
                FROM heads h WHERE h.resource_type = 'Contract' AND h.lo > h.version AND NOT h.deleted) d
       GROUP BY 1, 2, 3
      HAVING sum(d.delta) <> 0)
    SELECT EXISTS (SELECT FROM heads WHERE lo < version), EXISTS (SELECT FROM appended WHERE resource_type = 'Contract')$q$, TG_TABLE_SCHEMA)
  INTO late, contracts;
  IF late THEN
    -- 0005's recomputation, for the resources a late record reached: closes the version stored
    -- before the first appended one and recomputes every valid_to after it, over the closed
    -- versions and the latest (which keeps none). Each valid_to it moves moves that version's end
    -- in the counts.
    EXECUTE format($q$
      WITH changed AS (
        UPDATE %1$I.closed_version_facts f
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
