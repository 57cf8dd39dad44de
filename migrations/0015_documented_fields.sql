-- The analyst layer on the service's documented fields (docs/WAREHOUSE.md, "Typed columns" and
-- "Metric views").
--
-- 1. Date-only values as UTC dates. The service sends some dates without a time (an invoice's
--    DueDate "2012-08-02", its DocumentDate). Cast to timestamptz, such a string became midnight
--    in the session's TimeZone, so the same body gave a different instant per session. A string
--    of exactly ten characters that is a date is now midnight UTC; every other string is read as
--    before (0009's single parse on PostgreSQL 17, 0004's on 16).
DO $migration$
BEGIN
  IF current_setting('server_version_num')::int >= 170000 THEN
    EXECUTE $f$
      CREATE OR REPLACE FUNCTION wh_as_timestamptz(v jsonb) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
      RETURN CASE WHEN jsonb_typeof(v) = 'string' THEN
               CASE WHEN length(v #>> '{}') = 10 THEN JSON_VALUE(v, '$' RETURNING date NULL ON ERROR)::timestamp AT TIME ZONE 'UTC'
                    ELSE JSON_VALUE(v, '$' RETURNING timestamptz NULL ON ERROR) END
             END
    $f$;
  ELSE
    EXECUTE $f$
      CREATE OR REPLACE FUNCTION wh_as_timestamptz(v jsonb) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
      RETURN CASE WHEN jsonb_typeof(v) = 'string' THEN
               CASE WHEN length(v #>> '{}') = 10 THEN CASE WHEN pg_input_is_valid(v #>> '{}', 'date') THEN (v #>> '{}')::date::timestamp AT TIME ZONE 'UTC' END
                    WHEN pg_input_is_valid(v #>> '{}', 'timestamptz') THEN (v #>> '{}')::timestamptz END
             END
    $f$;
  END IF;
END
$migration$;

-- A timestamp's UTC date (a date-only string is its own date): the typed `date` columns.
-- wh_as_date of 0004 took the date part as written, so "2025-03-01T23:30:00-02:00" was the 1st
-- where its UTC date is the 2nd.
CREATE OR REPLACE FUNCTION wh_as_date(v jsonb) RETURNS date LANGUAGE sql STABLE PARALLEL SAFE
RETURN (wh_as_timestamptz(v) AT TIME ZONE 'UTC')::date;

-- 2. A JSON value with the letter case of every key folded, at any depth, as canonical text:
--    two values are the same up to the case of their keys exactly when these are equal (spec 9.3
--    lets the service change the case of property names without notice; the content hash
--    already ignores it). One line per node: its path (keys in lower case, array positions as
--    numbers) and, for a scalar, its value; for an object or array only its kind, so that an empty
--    one still counts. NULL for SQL NULL (a missing field). Used by <t>_changes to drop a "change"
--    that is only a change of case inside an object or an array of objects (a contract's Phases).
CREATE FUNCTION wh_case_folded(v jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
  WITH RECURSIVE node(path, value) AS (
    SELECT '[]'::jsonb, v WHERE v IS NOT NULL
    UNION ALL
    SELECT node.path || jsonb_build_array(c.step), c.value
      FROM node
      CROSS JOIN LATERAL (SELECT to_jsonb(lower(e.key)) AS step, e.value
                            FROM jsonb_each(CASE WHEN jsonb_typeof(node.value) = 'object' THEN node.value END) AS e
                          UNION ALL
                          SELECT to_jsonb(a.n - 1), a.value
                            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(node.value) = 'array' THEN node.value END) WITH ORDINALITY AS a(value, n)) c
  )
  SELECT string_agg(node.path::text || CASE WHEN jsonb_typeof(node.value) IN ('object', 'array') THEN ' ' || jsonb_typeof(node.value) ELSE ' = ' || node.value::text END,
                    E'\n' ORDER BY node.path::text, node.value::text)
    FROM node;
END;

-- 3. The contract versions that show an EndDate or an Ended status: the cancellations (an
--    EndDate set) and reactivations (an EndDate withdrawn, Ended then running again) of
--    metric_contract_transitions have one of them at one end. Replaces 0007's index on the
--    CancellationDate, which the service does not send. The predicate is the view's, word for word.
DROP INDEX version_facts_contract_marks;
CREATE INDEX version_facts_contract_ends ON version_facts (resource_id)
 WHERE resource_type = 'Contract'
   AND (jsonb_typeof(fields -> 'enddate') = 'string' OR lower(fields ->> 'lifecyclestatus') = 'ended');
