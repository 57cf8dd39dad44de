-- The history of every resource version (docs/CONTRACT.md section 5 and properties 3 and 5).
-- One append-only table holds every version of every type; analysts read it through the
-- per-type views below, so the physical layout can change without breaking their queries.
-- Written only by the sink from <prefix>.snapshots. Reasons for each choice: docs/WAREHOUSE.md.

CREATE TABLE resource_versions (
  resource_type    text        NOT NULL,  -- canonical name (Contract, Customer, ...); unknown future types are kept too
  resource_id      text        NOT NULL,
  version          int         NOT NULL CHECK (version >= 1),
  fetched_at       timestamptz NOT NULL,  -- the version's valid_from
  deleted          boolean     NOT NULL,
  body             jsonb,                 -- null exactly when deleted
  content_hash     text        NOT NULL,
  source_event_ids uuid[]      NOT NULL,  -- earliest first; empty for backfill/reconciliation
  source_events    text[]      NOT NULL,  -- parallel to source_event_ids
  customer_id      text,                  -- contracts only: the body's CustomerId (any letter case, spec 9.3)
  kafka_partition  int         NOT NULL,  -- where in <prefix>.snapshots this row came from
  kafka_offset     bigint      NOT NULL,
  -- The unique key that makes a replayed record a no-op.
  PRIMARY KEY (resource_type, resource_id, version),
  CHECK (deleted = (body IS NULL))
);

-- "History of one resource" and "latest version per resource" use the primary key (read backwards
-- for the latest). "What changed between two dates" and "state as of a date" narrow by fetch time:
CREATE INDEX resource_versions_fetched_at ON resource_versions (resource_type, fetched_at);
-- Contracts of one customer.
CREATE INDEX resource_versions_customer ON resource_versions (customer_id, resource_id) WHERE customer_id IS NOT NULL;

-- Append-only, enforced by the database for everyone, the table owner included: a statement-level
-- trigger rejects UPDATE, DELETE and TRUNCATE even when they would touch no row.
CREATE FUNCTION reject_history_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% on %.% is not allowed: the warehouse history is append-only', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'rebuild the warehouse from the snapshot log instead (billing-loader replay --rebuild)';
END
$$;

CREATE TRIGGER resource_versions_append_only BEFORE UPDATE OR DELETE ON resource_versions
  FOR EACH STATEMENT EXECUTE FUNCTION reject_history_change();
CREATE TRIGGER resource_versions_no_truncate BEFORE TRUNCATE ON resource_versions
  FOR EACH STATEMENT EXECUTE FUNCTION reject_history_change();
CREATE TRIGGER webhook_events_append_only BEFORE UPDATE OR DELETE ON webhook_events
  FOR EACH STATEMENT EXECUTE FUNCTION reject_history_change();
CREATE TRIGGER webhook_events_no_truncate BEFORE TRUNCATE ON webhook_events
  FOR EACH STATEMENT EXECUTE FUNCTION reject_history_change();

-- The per-type views. valid_to is the next version's valid_from; a filter on resource_id is pushed
-- below the window function (it is the PARTITION BY column), so one resource's history is an index
-- range scan of the primary key.
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES
      ('Contract', 'contract'), ('Customer', 'customer'), ('Order', 'order'), ('Invoice', 'invoice'),
      ('InvoiceDraft', 'invoice_draft'), ('Dunning', 'dunning'), ('PaymentTransaction', 'payment_transaction'),
      ('PaymentEscalationProcess', 'payment_escalation_process')) AS v(type_name, view_name)
  LOOP
    EXECUTE format($v$
      CREATE VIEW %1$I AS
      SELECT resource_id,
             version,
             fetched_at AS valid_from,
             lead(fetched_at) OVER w AS valid_to,
             lead(version) OVER w IS NULL AS is_current,
             deleted,
             body,
             content_hash,
             source_event_ids[1] AS source_event_id,
             source_events[1] AS source_event%3$s
        FROM resource_versions
       WHERE resource_type = %2$L
      WINDOW w AS (PARTITION BY resource_id ORDER BY version)$v$,
      t.view_name || '_history', t.type_name,
      CASE WHEN t.type_name = 'Contract' THEN ', customer_id' ELSE '' END);

    -- DISTINCT ON walks the primary key once, newest version first, without a window.
    EXECUTE format($v$
      CREATE VIEW %1$I AS
      SELECT resource_id, version, valid_from, valid_to, is_current, deleted, body, content_hash,
             source_event_id, source_event%3$s
        FROM (SELECT DISTINCT ON (resource_id)
                     resource_id,
                     version,
                     fetched_at AS valid_from,
                     NULL::timestamptz AS valid_to,
                     true AS is_current,
                     deleted,
                     body,
                     content_hash,
                     source_event_ids[1] AS source_event_id,
                     source_events[1] AS source_event%3$s
                FROM resource_versions
               WHERE resource_type = %2$L
               ORDER BY resource_id, version DESC) latest
       WHERE NOT deleted$v$,
      t.view_name || '_current', t.type_name,
      CASE WHEN t.type_name = 'Contract' THEN ', customer_id' ELSE '' END);
  END LOOP;
END
$$;

-- Two roles, cluster-wide (PostgreSQL roles are not per schema), shared by every warehouse schema
-- of the cluster, NOLOGIN: grant them to the login roles that need them.
--   billing_loader_writer  : the sink; may read and append, never update, delete or truncate.
--   billing_loader_analyst : reads webhook_events and the views; nothing else, no writes.
-- Creating a role that exists fails, and two schemas may be migrated at once, so the creation is
-- serialised by a cluster-wide advisory lock and tolerates a concurrent winner.
DO $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('billing-loader.roles'));
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'billing_loader_writer') THEN
    BEGIN
      CREATE ROLE billing_loader_writer NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'billing_loader_analyst') THEN
    BEGIN
      CREATE ROLE billing_loader_analyst NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
  END IF;
END
$$;

DO $$
DECLARE
  v record;
BEGIN
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO billing_loader_writer, billing_loader_analyst', current_schema());
  GRANT SELECT, INSERT ON resource_versions, webhook_events TO billing_loader_writer;
  GRANT SELECT ON schema_migrations TO billing_loader_writer;
  GRANT SELECT ON webhook_events TO billing_loader_analyst;
  FOR v IN SELECT table_name FROM information_schema.views WHERE table_schema = current_schema()
  LOOP
    EXECUTE format('GRANT SELECT ON %I TO billing_loader_analyst, billing_loader_writer', v.table_name);
  END LOOP;
END
$$;
