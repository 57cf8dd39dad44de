-- The few business fields the metric views (warehouse/metric-views.sql) read, stored once per
-- version beside the history. Reading them out of the stored bodies on every query decompresses
-- every TOASTed body each time, which is most of what a metric view costs; here they are a small
-- jsonb of just those keys. Derived state like resource_heads: kept by a statement-level trigger,
-- filled for the existing history below, and never the source of truth (the bodies are).

-- The top-level fields of a body that the metric views of its type read, keyed in lower case and
-- matched in any letter case (spec 9.3), as metric_fields does; NULL when the body is not an
-- object or has none of them. The key lists must cover every key metric-views.sql reads.
CREATE FUNCTION metric_fact_fields(resource_type text, body jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT jsonb_object_agg(lower(e.key), e.value)
          FROM jsonb_each(CASE WHEN jsonb_typeof(body) = 'object' THEN body END) AS e
         WHERE lower(e.key) = ANY (CASE resource_type
                 WHEN 'Contract' THEN '{planid,startdate,trialenddate,cancellationdate,enddate,phases,lifecyclestatus}'::text[]
                 WHEN 'Order' THEN '{ordertype,status,contractid,createdat,completedat}'::text[]
                 WHEN 'Dunning' THEN '{contractid,customerid,paymentescalationprocessid,documentdate}'::text[]
                 WHEN 'PaymentTransaction' THEN '{status,amount,currency,paymentprovider,createdat,completedat}'::text[]
                 WHEN 'PaymentEscalationProcess' THEN '{contractid,customerid,startedat,triggerdays,steps,resetat,status}'::text[]
               END));

CREATE TABLE metric_facts (
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  version bigint NOT NULL,
  fields jsonb,
  PRIMARY KEY (resource_type, resource_id, version)
);

-- Same shape as advance_resource_heads: one set-based statement per INSERT/COPY, the schema from
-- the trigger (the sink qualifies its names and a rebuild renames the schema).
CREATE FUNCTION append_metric_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    INSERT INTO %1$I.metric_facts (resource_type, resource_id, version, fields)
    SELECT resource_type, resource_id, version, %1$I.metric_fact_fields(resource_type, body)
      FROM appended
     WHERE resource_type IN ('Contract', 'Order', 'Dunning', 'PaymentTransaction', 'PaymentEscalationProcess')$q$, TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;

CREATE TRIGGER resource_versions_append_metric_facts AFTER INSERT ON resource_versions
  REFERENCING NEW TABLE AS appended
  FOR EACH STATEMENT EXECUTE FUNCTION append_metric_facts();

INSERT INTO metric_facts (resource_type, resource_id, version, fields)
SELECT resource_type, resource_id, version, metric_fact_fields(resource_type, body)
  FROM resource_versions
 WHERE resource_type IN ('Contract', 'Order', 'Dunning', 'PaymentTransaction', 'PaymentEscalationProcess');

-- The trigger runs as the role that appends: the writer. The analyst reads facts only through
-- the metric views.
GRANT SELECT, INSERT ON metric_facts TO billing_loader_writer;

-- pipeline_health groups the versions by the minute they were loaded.
CREATE INDEX resource_versions_loaded_at ON resource_versions (loaded_at);
