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
  fields        jsonb,                 -- the keys of version_facts_keys; NULL when none is present
  PRIMARY KEY (resource_type, resource_id, version)
);
-- "Current state": the latest version of each resource, without reading the older ones.
CREATE INDEX version_facts_current ON version_facts (resource_type, resource_id) WHERE valid_to IS NULL;
-- "As of a date": the versions valid at a moment, counted without visiting the rows.
CREATE INDEX version_facts_valid_from ON version_facts (resource_type, valid_from) INCLUDE (valid_to, deleted);

-- Per type, the body keys (lower case) whose values version_facts.fields holds: the typed column
-- mapping's and the metric views'. `migrate` writes them (src/warehouse/version-facts.ts) and
-- re-extracts the fields of a type whose list changed; a type without a row stores no fields.
CREATE TABLE version_facts_keys (
  resource_type text   PRIMARY KEY,
  keys          text[] NOT NULL
);

-- The top-level fields of a body named in `keys` (lower case), matched in any letter case, keyed
-- in lower case; NULL when the body is not an object or has none of them. When a body spells one
-- key twice, the spelling that sorts first wins (capitals first: PlanId, then planId, then
-- planid). The trigger below inlines the same expression: a call per row costs several times the
-- extraction itself.
CREATE FUNCTION version_fact_fields(keys text[], body jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT jsonb_object_agg(lower(e.key), e.value ORDER BY e.key DESC)
          FROM jsonb_each(CASE WHEN jsonb_typeof(body) = 'object' THEN body END) AS e
         WHERE lower(e.key) = ANY (keys));

-- Same shape as advance_resource_heads: set-based statements per INSERT/COPY, the schema from
-- the trigger (the sink qualifies its names and a rebuild renames the schema). The INSERT gives
-- each appended version the next appended one's valid_from; the UPDATE then closes, per resource,
-- the version stored before the first appended one, and recomputes the versions after it, which
-- only changes anything when a late record fills a gap below the stored head.
CREATE FUNCTION append_version_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    INSERT INTO %1$I.version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted, fields)
    SELECT a.resource_type, a.resource_id, a.version, a.fetched_at,
           lead(a.fetched_at) OVER (PARTITION BY a.resource_type, a.resource_id ORDER BY a.version),
           a.deleted, x.fields
      FROM appended a
      LEFT JOIN %1$I.version_facts_keys k ON k.resource_type = a.resource_type
      LEFT JOIN LATERAL (SELECT jsonb_object_agg(lower(e.key), e.value ORDER BY e.key DESC) AS fields
                           FROM jsonb_each(CASE WHEN k.keys IS NOT NULL AND jsonb_typeof(a.body) = 'object' THEN a.body END) AS e
                          WHERE lower(e.key) = ANY (k.keys)) x ON true$q$, TG_TABLE_SCHEMA);
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

-- The existing history: intervals here, fields by `migrate` (no key list is written yet).
INSERT INTO version_facts (resource_type, resource_id, version, valid_from, valid_to, deleted)
SELECT resource_type, resource_id, version, fetched_at,
       lead(fetched_at) OVER (PARTITION BY resource_type, resource_id ORDER BY version), deleted
  FROM resource_versions;

-- The trigger runs as the role that appends: the writer. The analyst reads facts only through
-- the views.
GRANT SELECT, INSERT, UPDATE ON version_facts TO billing_loader_writer;
GRANT SELECT ON version_facts_keys TO billing_loader_writer;
