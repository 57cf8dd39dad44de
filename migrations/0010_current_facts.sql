-- The current state, stored compactly (docs/WAREHOUSE.md, "What is stored and what is computed").
-- The rows of version_facts whose valid_to is NULL are one per resource, but each on a page of
-- its own among the resource's older versions, so a question over every current contract read
-- from there reads as many pages as there are contracts, and that grows with the history (five
-- versions per resource: five times the pages the answer needs). current_facts
-- holds only each resource's latest version (deleted ones too, flagged, as resource_heads does),
-- with its facts, so those pages hold nothing else. Derived like version_facts: written by the
-- same trigger, filled below, its fields refreshed by `migrate` with version_facts', reproduced
-- by a rebuild; updated in place, so outside the append-only fences.
CREATE TABLE current_facts (
  resource_type text        NOT NULL,
  resource_id   text        NOT NULL,
  version       int         NOT NULL,
  valid_from    timestamptz NOT NULL,
  deleted       boolean     NOT NULL,
  fields        jsonb,
  PRIMARY KEY (resource_type, resource_id)
);

-- append_version_facts of 0005 with one change: the INSERT into version_facts hands the rows it
-- wrote to an upsert of current_facts (the latest appended version per resource; a late version
-- below the stored one leaves it), so the fields are extracted once for both tables.
CREATE OR REPLACE FUNCTION append_version_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    WITH written AS (
      INSERT INTO %1$I.version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted, fields)
      SELECT a.resource_type, a.resource_id, a.version, a.fetched_at,
             lead(a.fetched_at) OVER (PARTITION BY a.resource_type, a.resource_id ORDER BY a.version),
             a.deleted, x.fields
        FROM appended a
        LEFT JOIN %1$I.version_facts_keys k ON k.resource_type = a.resource_type
        LEFT JOIN LATERAL (SELECT jsonb_object_agg(lower(e.key), e.value ORDER BY e.key DESC) AS fields
                             FROM jsonb_each(CASE WHEN k.keys IS NOT NULL AND jsonb_typeof(a.body) = 'object' THEN a.body END) AS e
                            WHERE lower(e.key) = ANY (k.keys)) x ON true
      RETURNING resource_type, resource_id, version, valid_from, deleted, fields)
    INSERT INTO %1$I.current_facts AS c (resource_type, resource_id, version, valid_from, deleted, fields)
    SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version, valid_from, deleted, fields
      FROM written
     ORDER BY resource_type, resource_id, version DESC
    ON CONFLICT (resource_type, resource_id) DO UPDATE
       SET version = EXCLUDED.version, valid_from = EXCLUDED.valid_from, deleted = EXCLUDED.deleted, fields = EXCLUDED.fields
     WHERE c.version < EXCLUDED.version$q$, TG_TABLE_SCHEMA);
  EXECUTE format($q$
    UPDATE %1$I.version_facts f
       SET valid_to = x.valid_to
      FROM (SELECT v.resource_type, v.resource_id, v.version,
                   lead(v.valid_from) OVER (PARTITION BY v.resource_type, v.resource_id ORDER BY v.version) AS valid_to
              FROM (SELECT resource_type, resource_id, min(version) AS lo FROM appended GROUP BY 1, 2) a
              CROSS JOIN LATERAL (SELECT max(p.version) AS version FROM %1$I.version_facts p
                                   WHERE p.resource_type = a.resource_type AND p.resource_id = a.resource_id AND p.version < a.lo) prev
              JOIN %1$I.version_facts v ON v.resource_type = a.resource_type AND v.resource_id = a.resource_id
                                       AND v.version >= COALESCE(prev.version, a.lo)) x
     WHERE f.resource_type = x.resource_type AND f.resource_id = x.resource_id AND f.version = x.version
       AND f.valid_to IS DISTINCT FROM x.valid_to$q$, TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;

INSERT INTO current_facts (resource_type, resource_id, version, valid_from, deleted, fields)
SELECT resource_type, resource_id, version, valid_from, deleted, fields
  FROM version_facts
 WHERE valid_to IS NULL;

-- The trigger runs as the role that appends: the writer. The analyst reads it only through the views.
GRANT SELECT, INSERT, UPDATE ON current_facts TO billing_loader_writer;
