-- The facts' letter-case rules do not depend on the database's collation. 0005 and 0022 folded a
-- key with lower(key) and, when a body spells one kept key twice, kept the spelling that sorts
-- first by `ORDER BY key DESC` (the last value aggregated wins): capitals first, PlanId before
-- planId before planid, in a database whose collation is C. Both follow the database's default
-- collation, and most are not C (en_US.UTF-8 in the PostgreSQL container images and most managed
-- services): there lower case sorts first, so the lower-case spelling won, and lower() runs the
-- language's case mapping on every key of every appended body, a third of the extraction's time
-- in an ICU en-US database (docs/BENCHMARKS.md, "The database's collation"). Both now use the C
-- collation: keys are compared byte by byte and folded by ASCII letter case (the service's
-- property names are ASCII). Versions appended before this migration keep the fields they got;
-- only a body that spells a kept key twice, in a database whose collation is not C, has other
-- fields than it would get now (`billing-loader replay --rebuild` extracts them again).

CREATE OR REPLACE FUNCTION version_fact_fields(keys text[], body jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT jsonb_object_agg(lower(e.key COLLATE "C"), e.value ORDER BY e.key COLLATE "C" DESC)
          FROM jsonb_each(CASE WHEN jsonb_typeof(body) = 'object' THEN body END) AS e
         WHERE lower(e.key COLLATE "C") = ANY (keys));

-- 0022's function; only the extraction's lower() and ORDER BY change.
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
        LEFT JOIN LATERAL (SELECT jsonb_object_agg(lower(e.key COLLATE "C"), e.value ORDER BY e.key COLLATE "C" DESC) AS fields
                             FROM jsonb_each(CASE WHEN k.keys IS NOT NULL AND jsonb_typeof(a.body) = 'object' THEN a.body END) AS e
                            WHERE lower(e.key COLLATE "C") = ANY (k.keys)) x ON true
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
