-- wh_field (migration 0004) as an expression PostgreSQL can inline into the caller's query. Its
-- body held the any-letter-case scan as a sub-select, and a SQL function whose body has a
-- sub-select is never inlined: every call went through the SQL function executor, about ten
-- times the cost of the lookups themselves, and the metric views call it for each element of
-- every contract's Phases. The scan moves to its own function, which COALESCE calls only when
-- none of the three direct lookups matched. Same results for every input.
CREATE FUNCTION wh_field_scan(body jsonb, folded text) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN jsonb_typeof(body) = 'object' THEN
         (SELECT e.value FROM jsonb_each(body) AS e WHERE lower(e.key) = folded LIMIT 1)
       END;

CREATE OR REPLACE FUNCTION wh_field(body jsonb, exact text, camel text, folded text) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN COALESCE(body -> exact, body -> camel, body -> folded, wh_field_scan(body, folded));
