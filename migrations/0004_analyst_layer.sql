-- The analyst layer's stored part (docs/WAREHOUSE.md, "The analyst layer"). The views and the
-- <t>_as_of functions themselves are not in a migration: `migrate` (re)creates them after the
-- SQL files from warehouse/typed-columns.json, so a user can add typed columns without code.

-- The latest version of every resource, deleted ones included, maintained in the same transaction
-- as the history (an UPSERT that keeps the highest version, by the trigger below). It is not history: it is
-- derived from resource_versions and may be updated; a rebuild recreates it. It makes "current
-- state" and "as of a date" read one row per resource instead of every version of the type.
CREATE TABLE resource_heads (
  resource_type text        NOT NULL,
  resource_id   text        NOT NULL,
  version       int         NOT NULL,
  fetched_at    timestamptz NOT NULL,
  deleted       boolean     NOT NULL,
  PRIMARY KEY (resource_type, resource_id)
);

INSERT INTO resource_heads (resource_type, resource_id, version, fetched_at, deleted)
SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version, fetched_at, deleted
  FROM resource_versions
 ORDER BY resource_type, resource_id, version DESC;

-- A top-level field of a body, its name matched in any letter case (spec 9.3 lets the service
-- change the case of property names without notice). The declared spelling and its camelCase
-- and lower-case forms are direct lookups; only a body in yet another case pays for the scan.
-- SQL-standard bodies (RETURN / BEGIN ATOMIC) are bound to the objects when created, so they
-- do not depend on the caller's search_path and survive the rename of a rebuild's swap.
-- Each use of a stored body decompresses it again (a 2 KB body is compressed by TOAST), which is
-- most of a typed column's cost: the common case touches the body once. `->` on a body that is
-- not an object gives NULL; only the scan needs the guard.
CREATE FUNCTION wh_field(body jsonb, exact text, camel text, folded text) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN COALESCE(body -> exact, body -> camel, body -> folded,
                CASE WHEN jsonb_typeof(body) = 'object' THEN
                  (SELECT e.value FROM jsonb_each(body) AS e WHERE lower(e.key) = folded LIMIT 1)
                END);

-- A JSON value as one SQL type, NULL when it does not cast (never an error that breaks a query;
-- typed_column_errors counts those). JSON null and a missing key are NULL too, and not errors.
CREATE FUNCTION wh_as_text(v jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) IN ('string', 'number', 'boolean') THEN v #>> '{}' END;

CREATE FUNCTION wh_as_numeric(v jsonb) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) IN ('string', 'number') AND pg_input_is_valid(v #>> '{}', 'numeric') THEN (v #>> '{}')::numeric END;

CREATE FUNCTION wh_as_integer(v jsonb) RETURNS integer LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) IN ('string', 'number') AND pg_input_is_valid(v #>> '{}', 'integer') THEN (v #>> '{}')::integer END;

CREATE FUNCTION wh_as_bigint(v jsonb) RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) IN ('string', 'number') AND pg_input_is_valid(v #>> '{}', 'bigint') THEN (v #>> '{}')::bigint END;

CREATE FUNCTION wh_as_boolean(v jsonb) RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) IN ('string', 'boolean') AND pg_input_is_valid(v #>> '{}', 'boolean') THEN (v #>> '{}')::boolean END;

CREATE FUNCTION wh_as_date(v jsonb) RETURNS date LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) = 'string' AND pg_input_is_valid(v #>> '{}', 'date') THEN (v #>> '{}')::date END;

-- A string without an offset is read in the session's TimeZone: the simulator and, as far as
-- the spec shows, the service send UTC with a Z.
CREATE FUNCTION wh_as_timestamptz(v jsonb) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) = 'string' AND pg_input_is_valid(v #>> '{}', 'timestamptz') THEN (v #>> '{}')::timestamptz END;

CREATE FUNCTION wh_as_jsonb(v jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(v) <> 'null' THEN v END;

-- Kept by a statement-level trigger, so every way a version is appended (the sink's COPY, its
-- row-by-row fallback, a rebuild, an operator's INSERT) moves the head in the same transaction,
-- with one set-based statement per INSERT/COPY, not one per row. The schema is taken from the
-- trigger, not the search_path, because the sink qualifies its table names and a rebuild renames
-- the schema.
CREATE FUNCTION advance_resource_heads() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    INSERT INTO %I.resource_heads AS h (resource_type, resource_id, version, fetched_at, deleted)
    SELECT DISTINCT ON (resource_type, resource_id) resource_type, resource_id, version, fetched_at, deleted
      FROM appended
     ORDER BY resource_type, resource_id, version DESC
    ON CONFLICT (resource_type, resource_id) DO UPDATE
       SET version = EXCLUDED.version, fetched_at = EXCLUDED.fetched_at, deleted = EXCLUDED.deleted
     WHERE h.version < EXCLUDED.version$q$, TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;

CREATE TRIGGER resource_versions_advance_heads AFTER INSERT ON resource_versions
  REFERENCING NEW TABLE AS appended
  FOR EACH STATEMENT EXECUTE FUNCTION advance_resource_heads();

-- The trigger runs as the role that appends: the writer. The analyst reads heads only through
-- the views.
GRANT SELECT, INSERT, UPDATE ON resource_heads TO billing_loader_writer;
