-- The contract versions that show a CancellationDate or an Ended status. Every cancellation and
-- reactivation of metric_contract_transitions (warehouse/metric-views.sql) has one of them at
-- one end, so the view compares the versions of only the contracts listed here, found without
-- reading every contract version. The predicate is the view's, word for word (PostgreSQL uses a
-- partial index only for a query that states its condition): a change to one is a change to both.
-- An index, not derived data: the view's answers do not depend on it, only its speed.
CREATE INDEX version_facts_contract_marks ON version_facts (resource_id)
 WHERE resource_type = 'Contract'
   AND (jsonb_typeof(fields -> 'cancellationdate') = 'string' OR lower(fields ->> 'lifecyclestatus') = 'ended');
