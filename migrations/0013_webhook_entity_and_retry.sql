-- The legal entity of each event (the payload's EntityId) and, for a redelivery, its
-- X-Retry-Count header: both are sent by the billing service beyond its interface spec. Nullable:
-- rows written before, and records older than these Avro fields, have neither.
ALTER TABLE webhook_events ADD COLUMN entity_id text, ADD COLUMN retry_count integer;
