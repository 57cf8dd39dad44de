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

CREATE OR REPLACE VIEW resource_latest AS
SELECT resource_type, resource_id, version, valid_from, deleted FROM current_facts;

DROP TRIGGER resource_versions_advance_heads ON resource_versions;
DROP FUNCTION advance_resource_heads();
DROP TABLE resource_heads;
CREATE VIEW resource_heads AS
SELECT resource_type, resource_id, version, valid_from AS fetched_at, deleted FROM current_facts;
GRANT SELECT ON resource_heads TO billing_loader_writer;

CREATE OR REPLACE FUNCTION append_version_facts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  late boolean;
BEGIN
  -- Every CTE reads the snapshot from before the statement: `heads` is current_facts before the
  -- upsert below, and the UPDATE touches only rows of earlier statements.
  EXECUTE format($q$
    WITH firsts AS (
      SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version AS lo, fetched_at
        FROM appended
       ORDER BY resource_type, resource_id, version),
    heads AS (
      SELECT f.resource_type, f.resource_id, f.lo, f.fetched_at, c.version
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
      RETURNING resource_type, resource_id, version, valid_from, deleted, fields),
    advanced AS (
      INSERT INTO %1$I.current_facts AS c (resource_type, resource_id, version, valid_from, deleted, fields)
      SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version, valid_from, deleted, fields
        FROM written
       ORDER BY resource_type, resource_id, version DESC
      ON CONFLICT (resource_type, resource_id) DO UPDATE
         SET version = EXCLUDED.version, valid_from = EXCLUDED.valid_from, deleted = EXCLUDED.deleted, fields = EXCLUDED.fields
       WHERE c.version < EXCLUDED.version)
    SELECT EXISTS (SELECT FROM heads WHERE lo < version)$q$, TG_TABLE_SCHEMA) INTO late;
  IF late THEN
    -- 0005's recomputation, for the resources a late record reached: closes the version stored
    -- before the first appended one and recomputes every valid_to after it.
    EXECUTE format($q$
      UPDATE %1$I.version_facts f
         SET valid_to = x.valid_to
        FROM (SELECT v.resource_type, v.resource_id, v.version,
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
         AND f.valid_to IS DISTINCT FROM x.valid_to$q$, TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END
$$;
