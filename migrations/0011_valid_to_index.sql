-- "As of a moment" from the other end. The versions valid at a moment are those that started by
-- it and end after it. version_facts_valid_from (0005) finds the first set, every version before
-- the moment, which for a recent moment is nearly the whole history of the type; this index finds
-- the second, the versions still open at the moment or begun after it, which for a recent moment
-- is a small part of it (docs/BENCHMARKS.md, Warehouse). <t>_as_of states its condition as
-- `COALESCE(valid_to, 'infinity') > at` so that the planner can use it, and chooses whichever
-- side is smaller. INCLUDE: a count needs no row. resource_id and version are included because the
-- views join resource_versions on them, and PostgreSQL counts them as read even when a query uses
-- no column of resource_versions and the join is removed: without them a count through
-- <t>_as_of visits every row it counts.
CREATE INDEX version_facts_valid_to ON version_facts (resource_type, COALESCE(valid_to, 'infinity'))
  INCLUDE (valid_from, valid_to, deleted, resource_id, version);

-- The latest versions: <t>_current and the metric views read current_facts (0010), and this
-- index would cost every appended version an insert for nothing.
DROP INDEX version_facts_current;
