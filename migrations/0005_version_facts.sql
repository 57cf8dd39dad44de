-- The analyst layer's narrow per-version table (docs/WAREHOUSE.md, "What is stored and what is
-- computed"). Every typed column and metric view used to read its field out of the stored body,
-- which decompresses the TOASTed body again for each access and matches the key in any letter
-- case at query time; and every valid_to was a probe for the next version. version_facts holds,
-- per version, its validity interval and the few top-level fields those read, under lower-case
-- keys, so both are paid once when the version is appended. Derived state like resource_heads:
-- kept by a statement-level trigger, filled for the existing history below and by `migrate`,
-- reproduced by a rebuild, never the source of truth (the bodies are); the append-only fences do
-- not cover it, because valid_to is set when the next version arrives.
CREATE TABLE version_facts (
  resource_type text        NOT NULL,
  resource_id   text        NOT NULL,
  version       int         NOT NULL,
  valid_from    timestamptz NOT NULL,  -- the version's fetched_at
  valid_to      timestamptz,           -- the next stored version's fetched_at; NULL for the latest
  deleted       boolean     NOT NULL,
  fields        jsonb,                 -- the keys of version_fact_fields; NULL when none is present
  PRIMARY KEY (resource_type, resource_id, version)
);
-- "Current state": the latest version of each resource, without reading the older ones.
CREATE INDEX version_facts_current ON version_facts (resource_type, resource_id) WHERE valid_to IS NULL;
-- "As of a date": the versions valid at a moment, counted without visiting the rows.
CREATE INDEX version_facts_valid_from ON version_facts (resource_type, valid_from) INCLUDE (valid_to, deleted);

-- Which body keys the stored fields were extracted with, per type: `migrate` generates
-- version_fact_fields from the typed column mapping and the metric views' keys, and re-extracts
-- the fields of a type whose key list differs from the one recorded here.
CREATE TABLE version_facts_keys (
  resource_type text   PRIMARY KEY,
  keys          text[] NOT NULL
);

-- Replaced by `migrate` right after the SQL files (src/warehouse/version-facts.ts).
CREATE FUNCTION version_fact_fields(resource_type text, body jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN NULL::jsonb;

-- Same shape as advance_resource_heads: set-based statements per INSERT/COPY, the schema from
-- the trigger (the sink qualifies its names and a rebuild renames the schema). The INSERT gives
-- each appended version the next appended one's valid_from; the UPDATE then closes, per resource,
-- the version stored before the first appended one, and recomputes the versions after it, which
-- only changes anything when a late record fills a gap below the stored head.
CREATE FUNCTION append_version_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    INSERT INTO %1$I.version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted, fields)
    SELECT resource_type, resource_id, version, fetched_at,
           lead(fetched_at) OVER (PARTITION BY resource_type, resource_id ORDER BY version),
           deleted, %1$I.version_fact_fields(resource_type, body)
      FROM appended$q$, TG_TABLE_SCHEMA);
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

CREATE TRIGGER resource_versions_append_version_facts AFTER INSERT ON resource_versions
  REFERENCING NEW TABLE AS appended
  FOR EACH STATEMENT EXECUTE FUNCTION append_version_facts();

-- The existing history: intervals here, fields by `migrate` (no key list is recorded yet).
INSERT INTO version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted)
SELECT resource_type, resource_id, version, fetched_at,
       lead(fetched_at) OVER (PARTITION BY resource_type, resource_id ORDER BY version), deleted
  FROM resource_versions;

-- The trigger runs as the role that appends: the writer. The analyst reads facts only through
-- the views.
GRANT SELECT, INSERT, UPDATE ON version_facts TO billing_loader_writer;
