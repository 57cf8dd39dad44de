-- The metric views (docs/WAREHOUSE.md#metric-views), created by `billing-loader migrate` after the
-- analyst views they read and dropped before those are replaced, in the same transaction, with
-- search_path set to the warehouse schema. Each definition lives in one place: a helper view
-- (metric_*) or one CTE; the public views are listed in src/warehouse/metric-views.ts.
--
-- Clocks: the business metrics use the service's own dates from the bodies (a contract's StartDate,
-- its phases' starts and EndDate, a payment's StatusTimestamp), never valid_from: valid_from is
-- when the loader read the state, which after a late webhook, a backfill or a rebuild can be days
-- after the change. Where the service sends no date (a cancellation, an escalation step or reset),
-- the view says which load-side time it uses. Days are UTC days. Each view counts only what has
-- happened by now() ("business now", before metric_contract_lifecycle). pipeline_health is about
-- the loader, so it uses the load-side times.

-- The top-level fields of a body named in `keys` (lower case) as one small object keyed in lower
-- case, matched in any letter case as the typed columns are (spec 9.3): version_fact_fields
-- (migrations 0005, 0023), the extraction the facts are kept with, under the argument order the
-- metric helpers use, so that the two never differ. The metric views read the same fields from
-- version_facts, stored once per version when it is appended, because reading them here
-- decompresses every body on every query; this stays for analysts. The current state is read
-- from current_facts (migration 0010), which holds the latest versions only.
DROP FUNCTION IF EXISTS metric_fields(jsonb, text[]);
CREATE FUNCTION metric_fields(body jsonb, keys text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN version_fact_fields(keys, body);

-- The phases of a contract body (Phases: [{Type, StartDate, PlanId}, ...]), keys in any letter case.
-- The fields are looked up in a level of their own (OFFSET 0), so each wh_as_* gets a plain column
-- and is inlined; given the lookup expression itself, it would run as a function call per value.
-- phase_type in lower case: trial, normal, inactive.
DROP FUNCTION IF EXISTS metric_contract_phases(jsonb);
CREATE FUNCTION metric_contract_phases(phases jsonb)
RETURNS TABLE (n bigint, phase_type text, starts_at timestamptz, plan_id text)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT e.n, lower(wh_as_text(k.phase_type)), wh_as_timestamptz(k.starts_at), wh_as_text(k.plan_id)
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(phases) = 'array' THEN phases ELSE '[]'::jsonb END) WITH ORDINALITY AS e(value, n)
    CROSS JOIN LATERAL (SELECT wh_field(e.value, 'Type', 'type', 'type') AS phase_type,
                               wh_field(e.value, 'StartDate', 'startDate', 'startdate') AS starts_at,
                               wh_field(e.value, 'PlanId', 'planId', 'planid') AS plan_id
                        OFFSET 0) k;
END;

-- The phases with what pricing needs: the variant and the quantity (Phases[].PlanVariantId,
-- Quantity), keys in any letter case, looked up in a level of their own (as above). The MRR views
-- read it: like every helper they read, it comes before the first view (migrate drops the
-- functions after the first view before the views, and views that call a function block that).
DROP FUNCTION IF EXISTS metric_mrr_phases(jsonb);
CREATE FUNCTION metric_mrr_phases(phases jsonb)
RETURNS TABLE (n bigint, phase_type text, starts_at timestamptz, plan_id text, plan_variant_id text, quantity numeric)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT e.n, lower(wh_as_text(k.phase_type)), wh_as_timestamptz(k.starts_at), wh_as_text(k.plan_id), wh_as_text(k.plan_variant_id), wh_as_numeric(k.quantity)
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(phases) = 'array' THEN phases ELSE '[]'::jsonb END) WITH ORDINALITY AS e(value, n)
    CROSS JOIN LATERAL (SELECT wh_field(e.value, 'Type', 'type', 'type') AS phase_type,
                               wh_field(e.value, 'StartDate', 'startDate', 'startdate') AS starts_at,
                               wh_field(e.value, 'PlanId', 'planId', 'planid') AS plan_id,
                               wh_field(e.value, 'PlanVariantId', 'planVariantId', 'planvariantid') AS plan_variant_id,
                               wh_field(e.value, 'Quantity', 'quantity', 'quantity') AS quantity
                        OFFSET 0) k;
END;

-- Changes only the version history shows, because the latest body no longer carries them: a
-- cancellation (an EndDate set where the previous version had none: the service cancels a
-- contract by giving it an EndDate and an Inactive phase from then on) and a reactivation (an
-- EndDate withdrawn, or an Ended contract running again). The bodies carry no date for either:
-- both are dated when the loader read the version (valid_from), a cancellation at most at its
-- EndDate (a contract read for the first time after it ended). "Previous" is the contract's
-- stored version just before (a deleted one included: it has no fields, so nothing is compared
-- across a deletion).
-- Of the contracts named, every version read in order of version, by key. Security definer: the
-- views call it for the analyst, who may not read version_facts; its body names every object it
-- reads (bound when created), so no search_path can redirect it.
DROP FUNCTION IF EXISTS metric_contract_transitions_in(text[]);
CREATE FUNCTION metric_contract_transitions_in(contract_ids text[])
RETURNS TABLE (contract_id text, movement text, "at" timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  SELECT x.contract_id, m.movement, m.at
    FROM (SELECT y.*, lag(y.end_date) OVER w AS previous_end_date, lag(y.status) OVER w AS previous_status
            -- OFFSET 0: the two fields are read before the window's sort, which then sorts narrow rows.
            FROM (SELECT h.resource_id AS contract_id, h.version, h.valid_from, h.deleted,
                         wh_as_timestamptz(h.fields -> 'enddate') AS end_date, wh_as_text(h.fields -> 'lifecyclestatus') AS status
                    FROM (SELECT DISTINCT u.id FROM unnest(contract_ids) AS u(id)) c
                    JOIN version_facts h ON h.resource_type = 'Contract' AND h.resource_id = c.id
                  OFFSET 0) y
          WINDOW w AS (PARTITION BY y.contract_id ORDER BY y.version)) x
    CROSS JOIN LATERAL (
      SELECT 'cancellation' AS movement, LEAST(x.valid_from, x.end_date) AS at
       WHERE x.end_date IS NOT NULL AND x.previous_end_date IS NULL
      UNION ALL
      SELECT 'reactivation', x.valid_from
       WHERE NOT x.deleted
         AND ((x.previous_end_date IS NOT NULL AND x.end_date IS NULL)
              OR (lower(x.previous_status) = 'ended' AND lower(x.status) IN ('active', 'intrial')))) m
   -- Either movement's condition, so that only the versions with a movement run the lateral.
   WHERE (x.end_date IS NOT NULL AND x.previous_end_date IS NULL)
      OR (NOT x.deleted
          AND ((x.previous_end_date IS NOT NULL AND x.end_date IS NULL)
               OR (lower(x.previous_status) = 'ended' AND lower(x.status) IN ('active', 'intrial'))));
END;

-- Answers kept at write time (docs/WAREHOUSE.md, "Answers kept at write time"). What the metric
-- views know of each contract (its lifecycle, its state spans, its movements, its paying spans)
-- and of each payment transaction, and the per-day sums contract_daily adds up, are kept in
-- tables (metric_*_cache), so that a read costs what its answer holds, not the whole history.
-- The trigger below lists in metric_contracts_dirty and metric_payments_dirty every contract and
-- transaction whose versions a statement appends (and each customer's last known fields, kept
-- alike in metric_customer_cache: "Business dates" below); metric_refresh() (at the end of this file; the
-- sink runs it every SINK_METRICS_REFRESH_MS) computes the listed ones' rows again from their
-- versions, puts them in place of the kept ones and takes them off the lists. Until then every
-- view reads a listed contract's or transaction's rows as computed from its versions at the read
-- (the *_live views, which read the listed ones only), never its kept ones: an answer is the same
-- whether the refresh has run or not, only slower while a list is long. When this file is applied
-- again (migrate, when it changed), the tables are dropped and filled from scratch, at the end of
-- the file.
CREATE TABLE metric_contracts_dirty (contract_id text NOT NULL);
CREATE INDEX metric_contracts_dirty_contract ON metric_contracts_dirty (contract_id);
-- The same for payment transactions (payment_outcomes).
CREATE TABLE metric_payments_dirty (transaction_id text NOT NULL);
CREATE INDEX metric_payments_dirty_transaction ON metric_payments_dirty (transaction_id);
-- And plan variants (their prices: the MRR of every customer on one).
CREATE TABLE metric_variants_dirty (plan_variant_id text NOT NULL);
-- The refresh's own row: when it last ran, how many it refreshed in all, the last month whose
-- MRR is kept (mrr_through; -infinity: none yet), and the moment before which the movements
-- counted for good are counted in metric_movement_day_cache (movements_settled_before;
-- -infinity: none). Two refreshes serialize on it (metric_refresh).
CREATE TABLE metric_cache_state (one boolean PRIMARY KEY DEFAULT true CHECK (one), refreshed_at timestamptz NOT NULL DEFAULT now(),
                                 contracts bigint NOT NULL DEFAULT 0, mrr_through date NOT NULL DEFAULT '-infinity',
                                 movements_settled_before timestamptz NOT NULL DEFAULT '-infinity');
INSERT INTO metric_cache_state DEFAULT VALUES;
DROP FUNCTION IF EXISTS metric_mark_contracts();
CREATE FUNCTION metric_mark_contracts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO %I.metric_contracts_dirty (contract_id) SELECT DISTINCT resource_id FROM added WHERE resource_type = %L',
                 TG_TABLE_SCHEMA, 'Contract');
  EXECUTE format('INSERT INTO %I.metric_payments_dirty (transaction_id) SELECT DISTINCT resource_id FROM added WHERE resource_type = %L',
                 TG_TABLE_SCHEMA, 'PaymentTransaction');
  EXECUTE format('INSERT INTO %I.metric_variants_dirty (plan_variant_id) SELECT DISTINCT resource_id FROM added WHERE resource_type = %L',
                 TG_TABLE_SCHEMA, 'PlanVariant');
  EXECUTE format('INSERT INTO %I.metric_customers_dirty (customer_id) SELECT DISTINCT resource_id FROM added WHERE resource_type = %L',
                 TG_TABLE_SCHEMA, 'Customer');
  RETURN NULL;
END
$$;
-- On resource_versions, beside the trigger that appends the facts (migration 0012): the two share
-- the statement's rows (PostgreSQL captures a statement's transition table once for all its
-- triggers), so listing costs one small insert per statement. Created before the tables are
-- filled (end of file): it takes resource_versions' lock, so no version is appended between the
-- fill and the end of this transaction unlisted.
CREATE TRIGGER resource_versions_mark_metric_contracts AFTER INSERT ON resource_versions
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION metric_mark_contracts();

-- The listed contracts' distinct ids (and, below, the transactions', the customers', the
-- dunnings' and the episode contracts': metric_dirty_*). Every view that reads kept rows leaves
-- the listed ones out by a left join on their distinct ids (WHERE id IS NULL), which is planned
-- as a hash or merge anti-join. NOT EXISTS on a list itself, which the planner expects nearly
-- empty, runs as a rescan of the list for every kept row: at 10,000,000 versions 0.1-0.15 s of
-- subscription_movements' 562,782 kept movements, 80 ms of metric_customer_versions' 250,000
-- customers, about 0.1 s of contract_segments read at one moment (docs/BENCHMARKS.md). The join
-- adds about 15 ms, and with 20,000 contracts listed takes 0.6 of the time.
CREATE VIEW metric_dirty_contracts AS
SELECT DISTINCT contract_id FROM metric_contracts_dirty;
CREATE VIEW metric_dirty_payments AS
SELECT DISTINCT transaction_id FROM metric_payments_dirty;

-- The cancellations and reactivations of every contract that ever had a version showing an
-- EndDate or an Ended status: every movement has one at one end (the version itself for a
-- cancellation, the one before for a reactivation). The partial indexes
-- closed_version_facts_contract_ends and current_facts_contract_ends (migrations 0015 and 0025)
-- list exactly those versions. The test is on the raw value (any string): the parsing decides.
CREATE VIEW metric_contract_transitions AS
SELECT t.contract_id, t.movement, t.at
  FROM metric_contract_transitions_in(ARRAY(SELECT DISTINCT f.resource_id FROM version_facts f
                                             WHERE f.resource_type = 'Contract'
                                               AND (jsonb_typeof(f.fields -> 'enddate') = 'string' OR lower(f.fields ->> 'lifecyclestatus') = 'ended'))) t;

-- Business now: every metric view counts what the service's dates place at or before now() (the
-- transaction's time), and nothing later. The service lists what it has scheduled (a cancelled
-- contract's EndDate and its Inactive phase, a Normal phase after a trial): a scheduled date is
-- the plan, not a fact, until it has come. One rule, applied by metric_contract_lifecycle_all for
-- the contracts (converted_at, ended_at, trial_outcome are NULL or "in trial" until their date has
-- come) and by each view below for its own dates. What is kept at write time holds the dates as
-- the bodies give them, the future ones too; the cut is made at each read.
--
-- Cancellations: the service sends no cancellation date. A cancellation is an EndDate the
-- previous version did not have (metric_contract_transitions); its time is when the loader read
-- it (at most the EndDate itself). Trials: a trial is a Trial phase (the body has no trial end
-- date); it ends where the next phase of another type starts, else at the contract's EndDate.
--
-- The listed contracts' last known fields (metric_contract_facts_live): a contract the service
-- still has from current_facts; a deleted one (a version without a body) from the version before
-- the deletion, deleted_at when the loader learnt of it (the deletion's first webhook, else its read).
CREATE VIEW metric_contract_last_known_live AS
SELECT c.resource_id AS contract_id, c.fields, false AS deleted, NULL::timestamptz AS deleted_at
  FROM metric_dirty_contracts d
  JOIN current_facts c ON c.resource_type = 'Contract' AND c.resource_id = d.contract_id
 WHERE NOT c.deleted
UNION ALL
SELECT c.resource_id, l.fields, true, LEAST(c.valid_from, (SELECT min(w.received_at) FROM resource_versions r CROSS JOIN unnest(r.source_event_ids) AS u(id) JOIN webhook_events w ON w.event_id = u.id
                                                             WHERE r.resource_type = 'Contract' AND r.resource_id = c.resource_id AND r.version = c.version))
  FROM metric_dirty_contracts d
  JOIN current_facts c ON c.resource_type = 'Contract' AND c.resource_id = d.contract_id
  CROSS JOIN LATERAL (SELECT f.fields FROM version_facts f
                       WHERE f.resource_type = 'Contract' AND f.resource_id = c.resource_id AND NOT f.deleted
                       ORDER BY f.version DESC LIMIT 1) l
 WHERE c.deleted;

-- One row per listed contract with a start date (a contract without one has no lifecycle to
-- count), from its last known fields, with the dates as the body gives them (no cut at now):
--   trial_start_date  the start of its first Trial phase; NULL: no trial
--   trial_end_date    the start of the first later phase that is not a trial, else the EndDate
--                     (NULL while neither is known)
--   converts_at       the trial's first Normal phase start, if before the EndDate (converted_at
--                     once it has come)
--   cancelled_at      its latest cancellation while its EndDate is set (metric_contract_transitions)
CREATE VIEW metric_contract_facts_live AS
SELECT c.contract_id, d.customer_id, d.plan_id, d.currency, d.start_date, d.end_date, d.phases,
       ph.trial_start_date, ph.trial_end_date, ph.converts_at,
       CASE WHEN d.end_date IS NOT NULL THEN cx.cancelled_at END AS cancelled_at,
       c.deleted, c.deleted_at
  FROM metric_contract_last_known_live c
  CROSS JOIN LATERAL (SELECT c.fields) AS x(f)
  -- OFFSET 0, here and below: each field is parsed once per contract. Flattened, every use of a
  -- date validates and casts it again (wh_as_timestamptz).
  CROSS JOIN LATERAL (
    SELECT wh_as_text(x.f -> 'customerid') AS customer_id,
           wh_as_text(x.f -> 'planid') AS plan_id,
           upper(wh_as_text(x.f -> 'currency')) AS currency,
           wh_as_timestamptz(x.f -> 'startdate') AS start_date,
           wh_as_timestamptz(x.f -> 'enddate') AS end_date,
           CASE WHEN jsonb_typeof(x.f -> 'phases') = 'array' THEN x.f -> 'phases' END AS phases
    OFFSET 0) d
  CROSS JOIN LATERAL (
    SELECT t.trial_start_date,
           COALESCE((SELECT min(p.starts_at) FROM metric_contract_phases(d.phases) p
                      WHERE p.phase_type IS DISTINCT FROM 'trial' AND p.starts_at > t.trial_start_date),
                    CASE WHEN d.end_date > t.trial_start_date THEN d.end_date END) AS trial_end_date,
           (SELECT min(p.starts_at) FROM metric_contract_phases(d.phases) p
             WHERE p.phase_type = 'normal' AND p.starts_at >= t.trial_start_date
               AND p.starts_at < COALESCE(d.end_date, 'infinity')) AS converts_at
      FROM (SELECT (SELECT min(p.starts_at) FROM metric_contract_phases(d.phases) p WHERE p.phase_type = 'trial') AS trial_start_date OFFSET 0) t
    OFFSET 0) ph
  LEFT JOIN (SELECT t.contract_id, max(t.at) AS cancelled_at
               FROM metric_contract_transitions_in(ARRAY(SELECT contract_id FROM metric_dirty_contracts)) t
              WHERE t.movement = 'cancellation' GROUP BY t.contract_id) cx
    ON cx.contract_id = c.contract_id
 WHERE d.start_date IS NOT NULL;

-- Each listed contract's states on the service's clock: one row per span [valid_from, valid_to) in
-- which the contract was in one state on one plan (valid_to NULL: still so, as far as the last
-- known body says), from its StartDate on (contract_segments has the definitions).
CREATE VIEW metric_contract_segments_live AS
-- Each contract is read once (MATERIALIZED: its dates parsed once, not at every state change),
-- with its phases as arrays: their starts and types, and the starts and plans of those with a
-- plan and a start, ordered by start then phase order, so the phase or plan at a moment is a
-- binary search (width_bucket: how many of those starts are at or before it, the last one being
-- the latest phase started by then) instead of a sort per state change.
WITH contracts AS MATERIALIZED (
  SELECT l.contract_id, l.customer_id, l.deleted, l.deleted_at, l.plan_id, l.start_date, l.cancelled_at, l.end_date, ph.starts, ph.types, ph.plan_starts, ph.plans
    FROM metric_contract_facts_live l
    CROSS JOIN LATERAL (SELECT array_agg(p.starts_at ORDER BY p.starts_at, p.n) FILTER (WHERE p.starts_at IS NOT NULL) AS starts,
                               array_agg(p.phase_type ORDER BY p.starts_at, p.n) FILTER (WHERE p.starts_at IS NOT NULL) AS types,
                               array_agg(p.starts_at ORDER BY p.starts_at, p.n) FILTER (WHERE p.plan_id IS NOT NULL AND p.starts_at IS NOT NULL) AS plan_starts,
                               array_agg(p.plan_id ORDER BY p.starts_at, p.n) FILTER (WHERE p.plan_id IS NOT NULL AND p.starts_at IS NOT NULL) AS plans
                          FROM metric_contract_phases(l.phases) p
                        OFFSET 0) ph
), points AS MATERIALIZED (
  -- The state and plan at each point are computed here, so the window's sort carries a narrow row
  -- (not the contract's arrays). A date two of a contract's dates share gives two points with the
  -- same state and plan: the first one's span is empty (it ends where it starts) and is left out.
  SELECT l.contract_id,
         v.at,
         CASE WHEN l.end_date <= v.at THEN 'ended'
              WHEN l.types[width_bucket(v.at, l.starts)] = 'trial' THEN 'in_trial'
              WHEN l.cancelled_at <= v.at THEN 'cancelled_running'
              ELSE 'active'
         END AS state,
         COALESCE(l.plans[width_bucket(v.at, l.plan_starts)], l.plan_id) AS plan_id
    FROM contracts l
    CROSS JOIN LATERAL unnest(ARRAY[l.start_date, l.cancelled_at, l.end_date] || l.starts) AS v(at)
   WHERE v.at >= l.start_date
), spans AS (
  SELECT p.contract_id, p.state, p.plan_id, p.at AS valid_from, lead(p.at) OVER (PARTITION BY p.contract_id ORDER BY p.at) AS valid_to
    FROM points p
)
SELECT s.contract_id, c.customer_id, s.state, s.plan_id, s.valid_from, s.valid_to, c.deleted, c.deleted_at
  FROM spans s
  JOIN contracts c ON c.contract_id = s.contract_id
 WHERE s.valid_to IS DISTINCT FROM s.valid_from;

-- The listed contracts' movements (subscription_movements has the definitions), each dated `at`
-- and counted while counts_from <= now() < counts_until (NULL: for good): a trial is "not
-- converted" from its end until it converts; a churn needs the contract to have paid.
CREATE VIEW metric_contract_movements_live AS
WITH lifecycle AS MATERIALIZED (
  SELECT contract_id, start_date, trial_start_date, trial_end_date, converts_at, end_date, phases FROM metric_contract_facts_live WHERE NOT deleted
), movements AS (
  SELECT CASE WHEN trial_start_date IS NULL THEN 'new' ELSE 'trial_start' END AS movement, contract_id, start_date AS at, start_date AS counts_from, NULL::timestamptz AS counts_until
    FROM lifecycle
  UNION ALL
  SELECT 'trial_conversion', contract_id, converts_at, converts_at, NULL FROM lifecycle WHERE converts_at IS NOT NULL
  UNION ALL
  SELECT 'trial_not_converted', contract_id, trial_end_date, trial_end_date, converts_at FROM lifecycle WHERE trial_start_date IS NOT NULL AND trial_end_date IS NOT NULL
  UNION ALL
  SELECT 'plan_change', p.contract_id, p.starts_at, p.starts_at, NULL
    FROM (SELECT l.contract_id, n.starts_at, n.plan_id, lag(n.plan_id) OVER (PARTITION BY l.contract_id ORDER BY n.starts_at, n.n) AS previous_plan_id
            FROM lifecycle l
            CROSS JOIN LATERAL metric_contract_phases(l.phases) n
           WHERE n.phase_type = 'normal' AND n.plan_id IS NOT NULL AND n.starts_at IS NOT NULL) p
   WHERE p.plan_id <> p.previous_plan_id
  UNION ALL
  -- Every listed contract's, a deleted one's and one without a StartDate too.
  SELECT t.movement, t.contract_id, t.at, t.at, NULL FROM metric_contract_transitions_in(ARRAY(SELECT contract_id FROM metric_dirty_contracts)) t
  UNION ALL
  -- A contract that had paid ends: it paid once its trial converted (before its EndDate), or,
  -- without a trial, once its StartDate had come.
  SELECT 'churn', contract_id, end_date, GREATEST(end_date, CASE WHEN trial_start_date IS NULL THEN start_date END), NULL
    FROM lifecycle WHERE end_date IS NOT NULL AND (converts_at IS NOT NULL OR trial_start_date IS NULL)
)
SELECT contract_id, movement, at, counts_from, counts_until FROM movements WHERE at IS NOT NULL;

-- The kept rows, one table per live view above, and the per-day sums of contract_daily (one row
-- per UTC day, plan and state: the running sum's delta, and how many span ends make it, so a day
-- and plan no span touches any more is dropped as contract_daily would not list it).
CREATE TABLE metric_contract_cache AS SELECT * FROM metric_contract_facts_live WITH NO DATA;
ALTER TABLE metric_contract_cache ADD PRIMARY KEY (contract_id);
CREATE TABLE metric_segment_cache AS SELECT * FROM metric_contract_segments_live WITH NO DATA;
CREATE INDEX metric_segment_cache_contract ON metric_segment_cache (contract_id);
CREATE TABLE metric_movement_cache AS SELECT * FROM metric_contract_movements_live WITH NO DATA;
CREATE INDEX metric_movement_cache_contract ON metric_movement_cache (contract_id);
CREATE TABLE metric_daily_cache (day date NOT NULL, plan_id text, state text NOT NULL, delta bigint NOT NULL, edges bigint NOT NULL);
CREATE UNIQUE INDEX metric_daily_cache_key ON metric_daily_cache (day, plan_id, state) NULLS NOT DISTINCT;

-- What the listed contracts change in metric_daily_cache: their spans' ends as computed now, less
-- those kept (contracts the service deleted count in neither). A span adds 1 on the day it starts
-- and takes 1 off on the day it ends.
CREATE VIEW metric_daily_dirty_deltas AS
SELECT e.day, s.plan_id, s.state, e.delta * s.sign AS delta, s.sign AS edges
  FROM (SELECT l.valid_from, l.valid_to, l.plan_id, l.state, 1 AS sign FROM metric_contract_segments_live l WHERE NOT l.deleted
        UNION ALL
        SELECT k.valid_from, k.valid_to, k.plan_id, k.state, -1
          FROM metric_segment_cache k JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
         WHERE NOT k.deleted) s
  CROSS JOIN LATERAL (VALUES ((s.valid_from AT TIME ZONE 'UTC')::date, 1), ((s.valid_to AT TIME ZONE 'UTC')::date, -1)) AS e(day, delta)
 WHERE e.day IS NOT NULL;

-- Every contract's rows: the kept ones of the contracts not listed, the live ones of the listed
-- (left out by a join on their distinct ids: metric_dirty_contracts, above).
CREATE VIEW metric_contract_facts AS
SELECT k.* FROM metric_contract_cache k
  LEFT JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
 WHERE d.contract_id IS NULL
UNION ALL
SELECT * FROM metric_contract_facts_live;

-- One row per contract with a start date, cut at business now:
--   converted_at      converts_at once it has come
--   paying_from       when it started paying: converted_at, or for a contract without a trial its
--                     StartDate once come; NULL: never paid (yet)
--   ended_at          the EndDate once come
--   end_kind          how it ended: 'churn' (it had paid) or 'trial_not_converted' (it never paid)
--   trial_outcome     for a trial: 'converted', 'not_converted' (the trial is over, never paid),
--                     'in_trial'
-- metric_contract_lifecycle_all has the row of every contract the loader knows, a deleted one too
-- (from its last version before the deletion: docs/WAREHOUSE.md, "Business dates"), with deleted
-- and deleted_at; metric_contract_lifecycle is its rows for the contracts the service still has,
-- which every metric view counts.
CREATE VIEW metric_contract_lifecycle_all AS
SELECT x.*,
       CASE WHEN x.ended_at IS NULL THEN NULL WHEN x.paying_from IS NOT NULL THEN 'churn' ELSE 'trial_not_converted' END AS end_kind,
       CASE WHEN x.trial_start_date IS NULL THEN NULL
            WHEN x.converted_at IS NOT NULL THEN 'converted'
            WHEN x.trial_end_date <= now() THEN 'not_converted'
            ELSE 'in_trial'
       END AS trial_outcome
  FROM (
    SELECT f.contract_id, f.customer_id, f.plan_id, f.start_date, f.end_date, f.phases, f.trial_start_date, f.trial_end_date, c.converted_at,
           COALESCE(c.converted_at, CASE WHEN f.trial_start_date IS NULL AND f.start_date <= now() THEN f.start_date END) AS paying_from,
           f.cancelled_at,
           CASE WHEN f.end_date <= now() THEN f.end_date END AS ended_at,
           f.deleted, f.deleted_at
      FROM metric_contract_facts f
      CROSS JOIN LATERAL (SELECT CASE WHEN f.converts_at <= now() THEN f.converts_at END AS converted_at) c) x;

CREATE VIEW metric_contract_lifecycle AS
SELECT contract_id, customer_id, plan_id, start_date, end_date, phases, trial_start_date, trial_end_date, converted_at, paying_from,
       cancelled_at, ended_at, end_kind, trial_outcome
  FROM metric_contract_lifecycle_all
 WHERE NOT deleted;

-- Each contract's states on the service's clock: one row per span [valid_from, valid_to) in which
-- the contract was in one state on one plan (valid_to NULL: still so, as far as the last known
-- body says), from its StartDate on. Every contract the loader knows, a deleted one from its last
-- known body (deleted, deleted_at: metric_contract_lifecycle_all). The state, the first that
-- applies: ended (EndDate reached), in trial (the phase in force is a Trial phase: a trial
-- cancelled during its trial stays a trial, never a paying contract), cancelled running
-- (cancelled_at reached), active. The plan is that of the contract's latest phase with a plan
-- started by then (an ended contract keeps its last plan), else the contract's PlanId. The spans
-- cover the future the body already lists (a scheduled EndDate or phase): business now is the
-- reader's cut (contract_daily, contract_state_at).
-- The listed contracts are left out of the kept spans by a join on their distinct ids
-- (metric_dirty_contracts, above).
CREATE VIEW contract_segments AS
SELECT k.* FROM metric_segment_cache k
  LEFT JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
 WHERE d.contract_id IS NULL
UNION ALL
SELECT * FROM metric_contract_segments_live;

-- Per UTC day (the state at the end of the day) and plan: how many contracts were in trial,
-- active, cancelled but still running, and ended (a stock: an ended contract stays counted).
-- One state per contract and day, the first that applies: ended (EndDate reached), in trial (the
-- phase in force is a Trial phase: a trial cancelled during its trial stays a trial, never a
-- paying contract), cancelled running (cancelled_at reached), active. The plan is that of the
-- contract's latest phase with a plan started by then (an ended contract keeps its last plan),
-- else the contract's PlanId. Days: from the first StartDate to the latest contract date that is
-- not in the future; to today when that date is less than 32 days ago (never after today).
-- A running sum of the spans' starts and ends (contract_segments, the contracts the service
-- still has) per day: the kept sums (metric_daily_cache) with the listed contracts' changes.
CREATE VIEW contract_daily AS
WITH deltas AS (
  SELECT day, plan_id, state, delta, edges FROM metric_daily_cache
  UNION ALL
  SELECT day, plan_id, state, delta, edges FROM metric_daily_dirty_deltas
), daily AS (
  SELECT day, plan_id,
         sum(delta) FILTER (WHERE state = 'in_trial') AS in_trial,
         sum(delta) FILTER (WHERE state = 'active') AS active,
         sum(delta) FILTER (WHERE state = 'cancelled_running') AS cancelled_running,
         sum(delta) FILTER (WHERE state = 'ended') AS ended
    FROM deltas GROUP BY day, plan_id
  HAVING sum(edges) > 0
), bounds AS (
  SELECT min(day) AS first_day, max(day) FILTER (WHERE day <= (now() AT TIME ZONE 'UTC')::date) AS last_seen FROM daily
), span AS (
  SELECT first_day,
         CASE WHEN (now() AT TIME ZONE 'UTC')::date - last_seen < 32 THEN (now() AT TIME ZONE 'UTC')::date ELSE last_seen END AS last_day
    FROM bounds
), grid AS (
  SELECT d::date AS day, pl.plan_id
    FROM span
    CROSS JOIN generate_series(span.first_day, span.last_day, interval '1 day') AS d
    CROSS JOIN (SELECT DISTINCT plan_id FROM daily) pl
)
SELECT g.day,
       g.plan_id,
       (sum(COALESCE(x.in_trial, 0)) OVER w)::bigint AS in_trial,
       (sum(COALESCE(x.active, 0)) OVER w)::bigint AS active,
       (sum(COALESCE(x.cancelled_running, 0)) OVER w)::bigint AS cancelled_running,
       (sum(COALESCE(x.ended, 0)) OVER w)::bigint AS ended
  FROM grid g
  LEFT JOIN daily x ON x.day = g.day AND x.plan_id IS NOT DISTINCT FROM g.plan_id
WINDOW w AS (PARTITION BY g.plan_id ORDER BY g.day);

-- One row per UTC day and kind of movement with at least one contract, dated by the service's
-- own dates and counted once come (business now, above):
--   new                  a contract without a trial starts (its StartDate): new paying business
--   trial_start          a contract with a trial starts (its StartDate)
--   trial_conversion     a trial's first Normal phase starts (converted_at): new paying business
--   trial_not_converted  a trial is over and never paid (at its trial_end_date): not churn
--   plan_change          a Normal phase on another plan than the Normal phase before it (its start);
--                        up or down needs prices, which the bodies do not carry
--   cancellation, reactivation  metric_contract_transitions (when the loader read them)
--   churn                a contract that had paid ends (its EndDate)
-- New paying business is new + trial_conversion; a trial that never paid is never churn. From
-- the kept movements (metric_movement_cache) and the listed contracts' live ones (the listed
-- ones left out of the kept rows by a join on their distinct ids: metric_dirty_contracts, above).
-- A movement row counts at `at`: it has come and has not stopped counting. The one definition for
-- subscription_movements and metric_movement_counts (a plain expression: inlined where it is
-- called, so the plans and index conditions are those of the expression written out).
CREATE FUNCTION metric_movement_counts_at(counts_from timestamptz, counts_until timestamptz, "at" timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN counts_from <= "at" AND (counts_until IS NULL OR "at" < counts_until);

CREATE VIEW subscription_movements AS
WITH movements AS (
  SELECT k.contract_id, k.movement, k.at, k.counts_from, k.counts_until
    FROM metric_movement_cache k LEFT JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
   WHERE d.contract_id IS NULL
  UNION ALL
  SELECT contract_id, movement, at, counts_from, counts_until FROM metric_contract_movements_live
)
SELECT (at AT TIME ZONE 'UTC')::date AS day,
       movement,
       count(DISTINCT contract_id) AS contracts,
       array_agg(DISTINCT contract_id ORDER BY contract_id) AS contract_ids
  FROM movements
 WHERE metric_movement_counts_at(counts_from, counts_until, now())
 GROUP BY 1, 2;
-- Contracts that started with a trial, by UTC month of the trial's start, for trials started by
-- now; converted: those with a converted_at (metric_contract_lifecycle, the same conversions as
-- subscription_movements' trial_conversion); not_converted: the trial is over and never paid;
-- still_in_trial: neither yet.
CREATE VIEW trial_cohorts AS
SELECT date_trunc('month', trial_start_date AT TIME ZONE 'UTC')::date AS cohort_month,
       count(*) AS trials,
       count(converted_at) AS converted,
       round(count(converted_at)::numeric / count(*), 4) AS conversion_rate,
       count(*) FILTER (WHERE trial_outcome = 'in_trial') AS still_in_trial,
       count(*) FILTER (WHERE trial_outcome = 'not_converted') AS not_converted
  FROM metric_contract_lifecycle
 WHERE trial_start_date <= now()
 GROUP BY 1;

-- Business dates (docs/WAREHOUSE.md, "Business dates"): what the warehouse knows of a date on the
-- service's clock, whenever the loader read it (a backfill included), where <t>_as_of(at) is what
-- the loader had read by then.
--
-- The customers and contracts below are read so that a filter on one customer or one contract
-- reaches every table by key (the overviews of one row cost that row, not every customer): no
-- CTE is read twice, each customer's contracts are summed in a grouped subquery joined on the
-- customer (a filter on the customer is pushed into it), and a deletion is looked up by the
-- customer, from current_facts by key and from the CustomerDeleted webhooks (all of them, through
-- the index on event: as many as the customers deleted), never from a computation over every
-- customer. Read whole, each is one pass over the customers and contracts, joined by hash.
--
-- The customers the loader learnt were deleted, and when (deleted_at: the loader's clock, the
-- service sends no deletion time a reader can fetch). From a deletion version (a customer whose
-- current version is a deletion): the deletion's first webhook, else its read. One row per such
-- customer, not grouped, so that a join on the customer reads current_facts by key.
CREATE VIEW metric_customer_deletion_reads AS
SELECT c.resource_id AS customer_id,
       LEAST(c.valid_from, (SELECT min(w.received_at) FROM resource_versions r CROSS JOIN unnest(r.source_event_ids) AS u(id) JOIN webhook_events w ON w.event_id = u.id
                             WHERE r.resource_type = 'Customer' AND r.resource_id = c.resource_id AND r.version = c.version)) AS deleted_at
  FROM current_facts c
 WHERE c.resource_type = 'Customer' AND c.deleted;

-- From the CustomerDeleted webhooks: the first one received naming the customer (CustomerId, any
-- letter case). A customer may have a row here and in metric_customer_deletion_reads: it was
-- deleted when the earlier of the two says.
CREATE VIEW metric_customer_deletion_webhooks AS
SELECT wh_as_text(wh_field(w.payload, 'CustomerId', 'customerId', 'customerid')) AS customer_id, min(w.received_at) AS deleted_at
  FROM webhook_events w
 WHERE w.event = 'CustomerDeleted'
 GROUP BY 1;

-- A customer's contracts by key (the overviews and metric_customer_last_known read for one customer).
CREATE INDEX metric_contract_cache_customer ON metric_contract_cache (customer_id);

-- Each customer's last known version, kept at write time like the contracts' rows (top of this
-- file): reading every customer's fields from its body (customer_current's typed columns) at each
-- read is most of the cost of customer_state_on. The trigger lists in metric_customers_dirty every
-- customer whose versions a statement appends; metric_refresh() computes their rows again. One
-- row per customer in current_facts: deleted, whether its current version is a deletion; the
-- fields of its current version, or for a deleted one of its last version before the deletion
-- (customer_history; none: version and the fields NULL). Nothing here depends on anything but the
-- customer's own versions: its deletion time and the ids only contracts and webhooks name are read
-- at each read (metric_customer_last_known).
CREATE TABLE metric_customers_dirty (customer_id text NOT NULL);
CREATE INDEX metric_customers_dirty_customer ON metric_customers_dirty (customer_id);
CREATE VIEW metric_dirty_customers AS
SELECT DISTINCT customer_id FROM metric_customers_dirty;

-- The listed customers' rows, computed from their versions.
CREATE VIEW metric_customer_versions_live AS
SELECT c.resource_id AS customer_id, false AS deleted, c.version, c.valid_from AS last_read_at, c.created_at, c.customer_name, c.company_name,
       c.first_name, c.last_name, c.email_address, c.external_customer_id, c.address_country, c.locale, c.is_locked
  FROM metric_dirty_customers l
  JOIN customer_current c ON c.resource_id = l.customer_id
UNION ALL
SELECT d.resource_id, true, h.version, h.valid_from, h.created_at, h.customer_name, h.company_name,
       h.first_name, h.last_name, h.email_address, h.external_customer_id, h.address_country, h.locale, h.is_locked
  FROM metric_dirty_customers l
  JOIN current_facts d ON d.resource_type = 'Customer' AND d.resource_id = l.customer_id AND d.deleted
  LEFT JOIN LATERAL (SELECT h.version, h.valid_from, h.created_at, h.customer_name, h.company_name, h.first_name, h.last_name, h.email_address,
                            h.external_customer_id, h.address_country, h.locale, h.is_locked
                       FROM customer_history h
                      WHERE h.resource_id = d.resource_id AND NOT h.deleted
                      ORDER BY h.version DESC LIMIT 1) h ON true;

CREATE TABLE metric_customer_cache AS SELECT * FROM metric_customer_versions_live WITH NO DATA;
ALTER TABLE metric_customer_cache ADD PRIMARY KEY (customer_id);
-- The writer role runs the trigger and the refresh.
GRANT SELECT, INSERT, DELETE ON metric_customers_dirty TO billing_loader_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON metric_customer_cache TO billing_loader_writer;

-- Every customer's row: the kept ones of the customers not listed, the live ones of the listed.
-- The listed ones are left out of the kept rows by a join on their distinct ids
-- (metric_dirty_contracts, above, says why).
CREATE VIEW metric_customer_versions AS
SELECT k.* FROM metric_customer_cache k
  LEFT JOIN metric_dirty_customers d ON d.customer_id = k.customer_id
 WHERE d.customer_id IS NULL
UNION ALL
SELECT * FROM metric_customer_versions_live;

-- The kept contracts whose customer was not in current_facts when the refresh kept them, by
-- contract: the refresh keeps the listed contracts' rows here. A customer once in current_facts
-- stays there, so every kept contract whose customer has not been read is here; one whose
-- customer was read since is checked again at each read, by key. What reading every kept
-- contract's customer against current_facts cost at each read (0.17-0.25 s at 10,000,000
-- versions) shrinks to these rows, usually none.
CREATE TABLE metric_unread_customer_cache (contract_id text NOT NULL, customer_id text NOT NULL);
CREATE INDEX metric_unread_customer_cache_contract ON metric_unread_customer_cache (contract_id);
CREATE INDEX metric_unread_customer_cache_customer ON metric_unread_customer_cache (customer_id);

-- Every customer the loader knows: from its last version that is not a deletion, else (never read:
-- deleted before the loader first asked for it) only its id, named by a contract or by its
-- CustomerDeleted webhook. deleted_at: when the loader learnt of the deletion (the earlier of the
-- two views above): a deleted customer can no longer be read, so its last known state stays.
-- Two disjoint parts, each read by key when filtered on one customer: the customers in
-- current_facts (metric_customer_versions), and the ids that are not in current_facts at all,
-- named by a contract or a CustomerDeleted webhook.
CREATE VIEW metric_customer_last_known AS
SELECT v.customer_id, v.version IS NOT NULL AS read, d.deleted_at IS NOT NULL AS deleted, d.deleted_at, v.last_read_at, v.created_at,
       v.customer_name, v.company_name, v.first_name, v.last_name, v.email_address, v.external_customer_id, v.address_country, v.locale, v.is_locked
  FROM metric_customer_versions v
  LEFT JOIN metric_customer_deletion_webhooks w ON w.customer_id = v.customer_id
  -- The deletion version's time looked up for the deleted customers only, by key.
  CROSS JOIN LATERAL (SELECT LEAST(CASE WHEN v.deleted THEN (SELECT r.deleted_at FROM metric_customer_deletion_reads r WHERE r.customer_id = v.customer_id) END,
                                   w.deleted_at) AS deleted_at) d
UNION ALL
SELECT i.customer_id, false, w.deleted_at IS NOT NULL, w.deleted_at, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  -- A customer is in metric_customer_versions exactly when current_facts has it: looked up by
  -- that table's key. The contracts' customer ids: of the kept ones, those whose customer was not
  -- read when they were kept (metric_unread_customer_cache); of the listed ones, from their live
  -- rows.
  FROM (SELECT k.customer_id FROM metric_unread_customer_cache k
         WHERE NOT EXISTS (SELECT FROM current_facts c WHERE c.resource_type = 'Customer' AND c.resource_id = k.customer_id)
           AND NOT EXISTS (SELECT FROM metric_contracts_dirty d WHERE d.contract_id = k.contract_id)
        UNION
        SELECT l.customer_id FROM metric_contract_facts_live l
         WHERE l.customer_id IS NOT NULL AND NOT EXISTS (SELECT FROM current_facts c WHERE c.resource_type = 'Customer' AND c.resource_id = l.customer_id)
        UNION
        SELECT w.customer_id FROM metric_customer_deletion_webhooks w
         WHERE w.customer_id IS NOT NULL AND NOT EXISTS (SELECT FROM current_facts c WHERE c.resource_type = 'Customer' AND c.resource_id = w.customer_id)) i
  LEFT JOIN metric_customer_deletion_webhooks w ON w.customer_id = i.customer_id;

-- The contracts on the service's clock at a moment: each contract started by `at` and not deleted
-- by then, in the state and on the plan of its span at `at` (contract_segments): state_since and
-- state_until bound that span. contract_state_on(day): at the end of that UTC day, as
-- contract_daily counts it. SQL-standard bodies, bound to the views when created (a rebuild's
-- schema rename keeps them working); migrate drops them before the views they read.
CREATE FUNCTION contract_state_at("at" timestamptz)
RETURNS TABLE (contract_id text, customer_id text, state text, plan_id text, state_since timestamptz, state_until timestamptz, deleted_at timestamptz)
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT s.contract_id, s.customer_id, s.state, s.plan_id, s.valid_from, s.valid_to, s.deleted_at
    FROM contract_segments s
   WHERE s.valid_from <= "at" AND (s.valid_to IS NULL OR "at" < s.valid_to) AND (s.deleted_at IS NULL OR s.deleted_at > "at");
END;
CREATE FUNCTION contract_state_on(day date)
RETURNS TABLE (contract_id text, customer_id text, state text, plan_id text, state_since timestamptz, state_until timestamptz, deleted_at timestamptz)
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT * FROM contract_state_at((day + 1)::timestamp AT TIME ZONE 'UTC' - interval '1 microsecond');
END;

-- The customers at a moment: each customer created by `at` (CreatedAt; one never read, once one
-- of its contracts had started) and not deleted by then, with its contracts' states at `at`
-- (contract_state_at) and status: paying (a contract active or cancelled but running), in_trial,
-- ended (every contract ended), none (no contract started). Its other fields are its last known
-- ones: the service dates no change of a customer's data, and a version's valid_from is when the
-- loader read it. customer_state_on(day): at the end of that UTC day. The contracts are counted
-- per customer before the join (one row per customer to join, not one per contract).
CREATE FUNCTION customer_state_at("at" timestamptz)
RETURNS TABLE (customer_id text, status text, contracts_in_trial bigint, contracts_paying bigint, contracts_ended bigint, created_at timestamptz,
               deleted_at timestamptz, customer_name text, company_name text, email_address text, external_customer_id text, address_country text)
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT k.customer_id,
         CASE WHEN c.contracts_paying > 0 THEN 'paying'
              WHEN c.contracts_in_trial > 0 THEN 'in_trial'
              WHEN c.contracts > 0 THEN 'ended'
              ELSE 'none' END,
         COALESCE(c.contracts_in_trial, 0),
         COALESCE(c.contracts_paying, 0),
         COALESCE(c.contracts_ended, 0),
         k.created_at, k.deleted_at, k.customer_name, k.company_name, k.email_address, k.external_customer_id, k.address_country
    FROM metric_customer_last_known k
    LEFT JOIN (SELECT s.customer_id,
                      count(*) AS contracts,
                      count(*) FILTER (WHERE s.state = 'in_trial') AS contracts_in_trial,
                      count(*) FILTER (WHERE s.state IN ('active', 'cancelled_running')) AS contracts_paying,
                      count(*) FILTER (WHERE s.state = 'ended') AS contracts_ended
                 FROM contract_state_at("at") s
                GROUP BY s.customer_id) c ON c.customer_id = k.customer_id
   WHERE (k.deleted_at IS NULL OR k.deleted_at > "at")
     AND COALESCE(k.created_at <= "at", c.contracts > 0);
END;
CREATE FUNCTION customer_state_on(day date)
RETURNS TABLE (customer_id text, status text, contracts_in_trial bigint, contracts_paying bigint, contracts_ended bigint, created_at timestamptz,
               deleted_at timestamptz, customer_name text, company_name text, email_address text, external_customer_id text, address_country text)
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT * FROM customer_state_at((day + 1)::timestamp AT TIME ZONE 'UTC' - interval '1 microsecond');
END;

-- One row per contract the loader knows, a deleted one (deleted, deleted_at) from its last known
-- body: its lifecycle (metric_contract_lifecycle_all) and its state and plan now
-- (contract_segments: not_started before its StartDate). subscription_overview is these rows with
-- the customer's deletion; customer_overview sums them per customer.
CREATE VIEW metric_contract_overview AS
SELECT l.contract_id, l.customer_id, COALESCE(n.state, 'not_started') AS state, COALESCE(n.plan_id, l.plan_id) AS plan_id,
       l.start_date, l.trial_start_date, l.trial_end_date, l.trial_outcome, l.converted_at, l.paying_from, l.cancelled_at, l.ended_at, l.end_kind,
       l.deleted, l.deleted_at
  FROM metric_contract_lifecycle_all l
  -- The span at now() of contract_segments, whose two parts are joined each on its own (a kept
  -- contract's span by key: an index scan for one contract or customer; the listed contracts'
  -- computed once): a join on contract_segments itself, a UNION ALL with a computed part, cannot
  -- look the kept rows up by key and reads them all.
  LEFT JOIN (SELECT k.contract_id, k.state, k.plan_id FROM metric_segment_cache k
              WHERE k.valid_from <= now() AND (k.valid_to IS NULL OR now() < k.valid_to)
                AND NOT EXISTS (SELECT FROM metric_contracts_dirty d WHERE d.contract_id = k.contract_id)) kn ON kn.contract_id = l.contract_id
  LEFT JOIN (SELECT s.contract_id, s.state, s.plan_id FROM metric_contract_segments_live s
              WHERE s.valid_from <= now() AND (s.valid_to IS NULL OR now() < s.valid_to)) ln ON ln.contract_id = l.contract_id
  CROSS JOIN LATERAL (SELECT COALESCE(kn.state, ln.state) AS state, COALESCE(kn.plan_id, ln.plan_id) AS plan_id) n;

-- One row per contract the loader knows (metric_contract_overview), and whether its customer was
-- deleted, and when (metric_customer_last_known's deleted and deleted_at: every customer a
-- contract names has a row there; NULL for a contract that names none), looked up by the
-- contract's customer.
CREATE VIEW subscription_overview AS
SELECT o.contract_id, o.customer_id, o.state, o.plan_id, o.start_date, o.trial_start_date, o.trial_end_date, o.trial_outcome, o.converted_at,
       o.paying_from, o.cancelled_at, o.ended_at, o.end_kind, o.deleted, o.deleted_at,
       CASE WHEN o.customer_id IS NOT NULL THEN d.deleted_at IS NOT NULL END AS customer_deleted, d.deleted_at AS customer_deleted_at
  FROM metric_contract_overview o
  LEFT JOIN metric_customer_deletion_reads r ON r.customer_id = o.customer_id
  LEFT JOIN metric_customer_deletion_webhooks w ON w.customer_id = o.customer_id
  CROSS JOIN LATERAL (SELECT LEAST(r.deleted_at, w.deleted_at) AS deleted_at) d;

-- One row per customer the loader knows (metric_customer_last_known: a deleted one with its last
-- known fields and deleted_at, one never read with its id only), so every contract has its
-- customer's row: its contracts now (those of subscription_overview, metric_contract_overview,
-- summed per customer), status now as customer_state_at gives it (none: no contract started),
-- when it first paid and when its last contract ended.
CREATE VIEW customer_overview AS
SELECT k.customer_id, k.read, k.deleted, k.deleted_at, k.created_at, k.last_read_at, k.customer_name, k.company_name, k.first_name, k.last_name,
       k.email_address, k.external_customer_id, k.address_country, k.locale, k.is_locked,
       CASE WHEN o.contracts_paying > 0 THEN 'paying'
            WHEN o.contracts_in_trial > 0 THEN 'in_trial'
            WHEN o.contracts_ended > 0 THEN 'ended'
            ELSE 'none' END AS status,
       COALESCE(o.contracts, 0) AS contracts,
       COALESCE(o.contracts_in_trial, 0) AS contracts_in_trial,
       COALESCE(o.contracts_paying, 0) AS contracts_paying,
       COALESCE(o.contracts_ended, 0) AS contracts_ended,
       o.first_paid_at,
       o.last_ended_at
  FROM metric_customer_last_known k
  LEFT JOIN (SELECT c.customer_id,
                    count(*) AS contracts,
                    count(*) FILTER (WHERE c.state = 'in_trial') AS contracts_in_trial,
                    count(*) FILTER (WHERE c.state IN ('active', 'cancelled_running')) AS contracts_paying,
                    count(*) FILTER (WHERE c.state = 'ended') AS contracts_ended,
                    min(c.paying_from) AS first_paid_at,
                    max(c.ended_at) AS last_ended_at
               FROM metric_contract_overview c
              GROUP BY c.customer_id) o ON o.customer_id = k.customer_id;

-- Payment escalations from what the service sends. The id a PaymentEscalated names
-- (PaymentEscalationProcessId) is the legal entity's escalation settings, not a per-contract
-- process, and no endpoint for it is documented; the episodes come from the webhooks themselves:
-- PaymentEscalated {ContractId, CustomerId, TriggerDays, DueDate, ...} for each step, and
-- PaymentEscalationReset {ContractId, CustomerId} when the escalation is reset (automatically once
-- the contract's open positions are paid, or by hand). Keys in any letter case.
--
-- One row per episode: a contract's steps from its first PaymentEscalated after the previous
-- reset to the next reset (or still open), in order of receipt, but for webhooks that arrived in
-- another order than their events ran (placed and paired, below). A step redelivered (the same
-- TriggerDays and DueDate within an episode) counts once. The service dates neither a step nor a
-- reset. A step fired TriggerDays days after the DueDate of the oldest open position (spec 6.2):
-- started_at is that day of the first step (DueDate + TriggerDays; its receipt when either is
-- missing). The reset is placed after it by the time that passed between the first step's
-- webhook and the reset's, and never before the last step (each webhook is sent when it
-- happens; a redelivery is late by its retry delay). due_date: the DueDate of the latest step.
-- Steps are ordered by the day they ran (DueDate + TriggerDays), then by receipt.
--
-- outcome, only as far as the history shows it: the contract's Balance as read right after the
-- reset, which is the first contract version that the reset caused the loader to read, else
-- (the reset changed nothing on the contract) the latest version caused only by webhooks
-- received before the reset, provided it was read during the episode (caused by a webhook
-- received at or after the first step): a version read before the escalation shows the contract
-- before it owed, and the reset's read finding the same content tells only that the debt was gone
-- by then, not whether before the reset or after. A reset that overtook its steps' webhooks
-- closes the episode they start (paired, below). paid: Balance >= 0 (nothing owed: the service resets on its own
-- once paid); reset: Balance < 0 (reset while still owed). unknown: no such version, no Balance,
-- or a webhook about the contract or one of its payments arrived after the reset and before that
-- read (the read may already show a later payment). open: not reset yet. outcome_read_at: when
-- the loader read the version the outcome rests on. A payment the service records between the
-- reset and that read, and whose webhook arrives only after the read, cannot be told apart from
-- one before the reset: the outcome is an inference from what the loader read, exact when the
-- read follows the reset by less than the time to the next payment.
--
-- Kept at write time (docs/WAREHOUSE.md, "Answers kept at write time"), like the contracts' rows:
-- metric_escalation_episode_cache keeps each contract's episodes and metric_dunning_cache each
-- dunning's facts, both computed with no business-now cut (as if every date had come); the views
-- read the kept rows of what is not listed and compute the listed at the read, and make the cuts
-- there. An episode reads more than its contract's versions, so the lists are filled by two
-- triggers, one on resource_versions and one on webhook_events. A contract is listed
-- (metric_episodes_dirty) when a statement appends:
--   its versions (the outcome's read, the placed steps' reads, contract_history);
--   a webhook naming it (ContractId: its steps and resets, and the unknown rule's webhooks about
--   the contract);
--   a webhook naming a payment transaction whose current version names it (the unknown rule's
--   PaymentSucceeded and the like name only the transaction), and a version of a transaction that
--   names it now or named it before (the rule reads the transaction's current ContractId);
--   a webhook one of its versions names as its cause (source_event_ids: when the version was read
--   for) that was not stored yet when the version was (metric_episode_sources_pending).
-- A dunning is listed (metric_dunnings_dirty) when its versions or its DunningCreated are
-- appended. Where an input names the contract or dunning itself, the listing commits with it; an
-- input found through another table (a payment webhook through its transaction, a late cause
-- through the pending list) is found when the other side was committed first, so a refresh that
-- runs between two sinks' commits of the two may keep a row without the later one until the
-- contract is listed again.
CREATE TABLE metric_episodes_dirty (contract_id text NOT NULL);
CREATE INDEX metric_episodes_dirty_contract ON metric_episodes_dirty (contract_id);
CREATE TABLE metric_dunnings_dirty (dunning_id text NOT NULL);
CREATE INDEX metric_dunnings_dirty_dunning ON metric_dunnings_dirty (dunning_id);
CREATE VIEW metric_dirty_episodes AS
SELECT DISTINCT contract_id FROM metric_episodes_dirty;
CREATE VIEW metric_dirty_dunnings AS
SELECT DISTINCT dunning_id FROM metric_dunnings_dirty;
-- Each PaymentEscalated and PaymentEscalationReset that names a contract, with the fields the
-- episodes read (keys in any letter case), and each DunningCreated's DunningId: appended by the
-- webhook trigger in the webhook's own statement, so never behind it. The episodes find a
-- contract's webhooks here by key, not by reading every escalation webhook's payload.
CREATE TABLE metric_escalation_event_cache (event_id uuid PRIMARY KEY, event text NOT NULL, received_at timestamptz NOT NULL, contract_id text NOT NULL,
                                            customer_id text, trigger_days integer, due_date timestamptz);
CREATE INDEX metric_escalation_event_cache_contract ON metric_escalation_event_cache (contract_id, received_at);
CREATE INDEX metric_escalation_event_cache_received ON metric_escalation_event_cache (received_at);
CREATE TABLE metric_dunning_notice_cache (dunning_id text NOT NULL, received_at timestamptz NOT NULL);
CREATE INDEX metric_dunning_notice_cache_dunning ON metric_dunning_notice_cache (dunning_id, received_at);
-- The webhooks contract versions name as their cause that were not stored when the version was.
CREATE TABLE metric_episode_sources_pending (event_id uuid NOT NULL, contract_id text NOT NULL);
CREATE INDEX metric_episode_sources_pending_event ON metric_episode_sources_pending (event_id);

-- Both triggers run one statement each per appended statement (the rows in the transition table;
-- the schema from the trigger, as the sink qualifies its names). The one on resource_versions
-- fires after resource_versions_append_version_facts (triggers fire in name order), so the
-- transactions' versions it reads include the statement's own.
DROP FUNCTION IF EXISTS metric_mark_episodes_versions();
CREATE FUNCTION metric_mark_episodes_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    WITH dunnings AS (
      INSERT INTO %1$I.metric_dunnings_dirty (dunning_id) SELECT DISTINCT resource_id FROM added WHERE resource_type = 'Dunning'
    ), pending AS (
      INSERT INTO %1$I.metric_episode_sources_pending (event_id, contract_id)
      SELECT DISTINCT u.id, a.resource_id
        FROM added a CROSS JOIN LATERAL unnest(a.source_event_ids) AS u(id)
       WHERE a.resource_type = 'Contract' AND NOT EXISTS (SELECT FROM %1$I.webhook_events w WHERE w.event_id = u.id)
    )
    INSERT INTO %1$I.metric_episodes_dirty (contract_id)
    SELECT DISTINCT x.contract_id
      FROM (SELECT a.resource_id AS contract_id FROM added a WHERE a.resource_type = 'Contract'
            UNION ALL
            SELECT %1$I.wh_as_text(%1$I.wh_field(a.body, 'ContractId', 'contractId', 'contractid')) FROM added a WHERE a.resource_type = 'PaymentTransaction'
            UNION ALL
            SELECT %1$I.wh_as_text(f.fields -> 'contractid')
              FROM (SELECT DISTINCT resource_id FROM added WHERE resource_type = 'PaymentTransaction') a
              JOIN %1$I.version_facts f ON f.resource_type = 'PaymentTransaction' AND f.resource_id = a.resource_id) x
     WHERE x.contract_id IS NOT NULL$q$, TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
DROP FUNCTION IF EXISTS metric_mark_episodes_webhooks();
CREATE FUNCTION metric_mark_episodes_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    WITH fields AS MATERIALIZED (
      SELECT w.event_id, w.event, w.received_at, w.payload,
             %1$I.wh_as_text(%1$I.wh_field(w.payload, 'ContractId', 'contractId', 'contractid')) AS contract_id,
             %1$I.wh_as_text(%1$I.wh_field(w.payload, 'PaymentTransactionId', 'paymentTransactionId', 'paymenttransactionid')) AS transaction_id,
             CASE WHEN w.event = 'DunningCreated' THEN %1$I.wh_as_text(%1$I.wh_field(w.payload, 'DunningId', 'dunningId', 'dunningid')) END AS dunning_id
        FROM added w
    ), escalations AS (
      INSERT INTO %1$I.metric_escalation_event_cache (event_id, event, received_at, contract_id, customer_id, trigger_days, due_date)
      SELECT f.event_id, f.event, f.received_at, f.contract_id,
             %1$I.wh_as_text(%1$I.wh_field(f.payload, 'CustomerId', 'customerId', 'customerid')),
             %1$I.wh_as_integer(%1$I.wh_field(f.payload, 'TriggerDays', 'triggerDays', 'triggerdays')),
             %1$I.wh_as_timestamptz(%1$I.wh_field(f.payload, 'DueDate', 'dueDate', 'duedate'))
        FROM fields f
       WHERE f.event IN ('PaymentEscalated', 'PaymentEscalationReset') AND f.contract_id IS NOT NULL
    ), notices AS (
      INSERT INTO %1$I.metric_dunning_notice_cache (dunning_id, received_at) SELECT dunning_id, received_at FROM fields WHERE dunning_id IS NOT NULL
    ), dunnings AS (
      INSERT INTO %1$I.metric_dunnings_dirty (dunning_id) SELECT DISTINCT dunning_id FROM fields WHERE dunning_id IS NOT NULL
    ), sources AS (
      DELETE FROM %1$I.metric_episode_sources_pending p USING fields f WHERE p.event_id = f.event_id RETURNING p.contract_id
    )
    INSERT INTO %1$I.metric_episodes_dirty (contract_id)
    SELECT DISTINCT x.contract_id
      FROM (SELECT contract_id FROM fields
            UNION ALL
            SELECT %1$I.wh_as_text(t.fields -> 'contractid')
              FROM fields f
              JOIN %1$I.current_facts t ON t.resource_type = 'PaymentTransaction' AND t.resource_id = f.transaction_id
            UNION ALL
            SELECT contract_id FROM sources) x
     WHERE x.contract_id IS NOT NULL$q$, TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
-- Created before the lists are filled (end of this file; the two webhook tables just below): each
-- takes its table's lock, so nothing is appended unlisted meanwhile.
CREATE TRIGGER resource_versions_mark_metric_episodes AFTER INSERT ON resource_versions
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION metric_mark_episodes_versions();
CREATE TRIGGER webhook_events_mark_metric_episodes AFTER INSERT ON webhook_events
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION metric_mark_episodes_webhooks();
INSERT INTO metric_escalation_event_cache (event_id, event, received_at, contract_id, customer_id, trigger_days, due_date)
SELECT w.event_id, w.event, w.received_at, k.contract_id,
       wh_as_text(wh_field(w.payload, 'CustomerId', 'customerId', 'customerid')),
       wh_as_integer(wh_field(w.payload, 'TriggerDays', 'triggerDays', 'triggerdays')),
       wh_as_timestamptz(wh_field(w.payload, 'DueDate', 'dueDate', 'duedate'))
  FROM webhook_events w
  CROSS JOIN LATERAL (SELECT wh_as_text(wh_field(w.payload, 'ContractId', 'contractId', 'contractid')) AS contract_id) k
 WHERE w.event IN ('PaymentEscalated', 'PaymentEscalationReset') AND k.contract_id IS NOT NULL;
INSERT INTO metric_dunning_notice_cache (dunning_id, received_at)
SELECT k.dunning_id, w.received_at
  FROM webhook_events w
  CROSS JOIN LATERAL (SELECT wh_as_text(wh_field(w.payload, 'DunningId', 'dunningId', 'dunningid')) AS dunning_id) k
 WHERE w.event = 'DunningCreated' AND k.dunning_id IS NOT NULL;
INSERT INTO metric_episode_sources_pending (event_id, contract_id)
SELECT DISTINCT u.id, r.resource_id
  FROM resource_versions r CROSS JOIN LATERAL unnest(r.source_event_ids) AS u(id)
 WHERE r.resource_type = 'Contract' AND cardinality(r.source_event_ids) > 0 AND NOT EXISTS (SELECT FROM webhook_events w WHERE w.event_id = u.id);
-- Statistics for the refresh at the end of this file, which reads them by contract (a table just
-- filled has none: the planner would take it for empty).
ANALYZE metric_escalation_event_cache, metric_dunning_notice_cache;

-- The episodes of the contracts named (each once), each from its escalation webhooks received by
-- its cut (the parallel array): the definition above, but for the cut on started_at, which the
-- readers make (metric_escalation_episodes). Security definer, as
-- metric_contract_transitions_in: the views call it for the analyst.
CREATE FUNCTION metric_escalation_episodes_in(contract_ids text[], cuts timestamptz[])
RETURNS TABLE (episode_id text, contract_id text, customer_id text, started_at timestamptz, ended_at timestamptz, due_date timestamptz,
               max_trigger_days integer, trigger_days_reached integer[], outcome text, duration interval,
               first_received_at timestamptz, reset_received_at timestamptz, outcome_read_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
WITH events AS MATERIALIZED (
  -- The escalation webhooks of the contracts named (metric_escalation_event_cache: their fields
  -- as the payload gives them), received by each one's cut.
  SELECT e.event_id, e.event, e.received_at, e.contract_id, e.customer_id, e.trigger_days, e.due_date
    FROM unnest(contract_ids, cuts) AS c(id, cut)
    JOIN metric_escalation_event_cache e ON e.contract_id = c.id
   WHERE e.received_at <= c.cut
), numbered AS (
  -- An event's episode: how many resets of the contract were received before it.
  SELECT e.*,
         COALESCE(count(*) FILTER (WHERE e.event = 'PaymentEscalationReset')
                    OVER (PARTITION BY e.contract_id ORDER BY e.received_at, e.event_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS episode_no
    FROM events e
), resets AS (
  -- Each episode's first reset received (episode_no: the resets received before it).
  SELECT DISTINCT ON (n.contract_id, n.episode_no) n.contract_id, n.episode_no, n.event_id, n.received_at
    FROM numbered n
   WHERE n.event = 'PaymentEscalationReset'
   ORDER BY n.contract_id, n.episode_no, n.received_at, n.event_id
), step_days AS (
  -- The latest day a step of each episode ran (DueDate + TriggerDays), as numbered by receipt.
  SELECT n.contract_id, n.episode_no, max(n.due_date + n.trigger_days * interval '1 day') AS last_step_day
    FROM numbered n
   WHERE n.event = 'PaymentEscalated'
   GROUP BY n.contract_id, n.episode_no
), placed AS (
  -- A step received after a reset, whose contract read shows nothing owed, belongs to the
  -- episode that reset closed: a step runs only while a position is overdue (spec 6.2), so it
  -- ran before the payment the reset followed, and its webhook arrived after the reset's (events
  -- may arrive in another order, spec 6.1.7). The read: the first contract version the step
  -- caused, else (it changed nothing) the latest one caused by webhooks received between the
  -- reset and the step.
  --
  -- Also a step that fired (DueDate + TriggerDays) no later than a step received before that reset:
  -- the steps of a contract run in the order of those days, so it ran before the reset too.
  SELECT n.*,
         CASE WHEN n.event = 'PaymentEscalated' AND n.episode_no > 0
                   AND (wh_as_numeric(v.fields -> 'balance') >= 0
                        OR n.due_date + n.trigger_days * interval '1 day' <= d.last_step_day)
              THEN n.episode_no - 1 ELSE n.episode_no END AS placed_no
    FROM numbered n
    -- The episode before, by key (joins, not a scan of every event per event).
    LEFT JOIN step_days d ON n.event = 'PaymentEscalated' AND d.contract_id = n.contract_id AND d.episode_no = n.episode_no - 1
    LEFT JOIN resets r ON n.event = 'PaymentEscalated' AND r.contract_id = n.contract_id AND r.episode_no = n.episode_no - 1
    LEFT JOIN LATERAL (
      SELECT f.fields
        FROM (SELECT r.received_at AS reset_at) rr
        CROSS JOIN LATERAL (
          SELECT x.version
            FROM (SELECT v.version, v.source_event_ids,
                         CASE WHEN cardinality(v.source_event_ids) > 0
                              THEN (SELECT max(w.received_at) FROM unnest(v.source_event_ids) AS u(id) JOIN webhook_events w ON w.event_id = u.id)
                              ELSE v.fetched_at END AS read_for
                    FROM resource_versions v
                   WHERE v.resource_type = 'Contract' AND v.resource_id = n.contract_id AND NOT v.deleted) x
           WHERE n.event_id = ANY (x.source_event_ids) OR x.read_for BETWEEN rr.reset_at AND n.received_at
           ORDER BY n.event_id = ANY (x.source_event_ids) DESC,
                    CASE WHEN n.event_id = ANY (x.source_event_ids) THEN x.version END,
                    x.version DESC
           LIMIT 1) c
        JOIN version_facts f ON f.resource_type = 'Contract' AND f.resource_id = n.contract_id AND f.version = c.version) v
      ON n.event = 'PaymentEscalated' AND n.episode_no > 0 AND r.contract_id IS NOT NULL
), steps AS (
  SELECT DISTINCT ON (n.contract_id, n.placed_no, n.trigger_days, n.due_date) n.event_id, n.event, n.received_at, n.contract_id, n.customer_id, n.trigger_days, n.due_date,
         n.placed_no AS episode_no,
         COALESCE(n.due_date + n.trigger_days * interval '1 day', n.received_at) AS step_at
    FROM placed n
   WHERE n.event = 'PaymentEscalated'
   ORDER BY n.contract_id, n.placed_no, n.trigger_days, n.due_date, n.received_at, n.event_id
), episodes AS (
  SELECT s.contract_id, s.episode_no,
         -- The steps in the order they ran (their day), receipt order among the same day's.
         (array_agg(s.event_id ORDER BY s.step_at, s.received_at, s.event_id))[1] AS first_event_id,
         (array_agg(s.customer_id ORDER BY s.step_at, s.received_at, s.event_id) FILTER (WHERE s.customer_id IS NOT NULL))[1] AS customer_id,
         min(s.step_at) AS started_at,
         max(s.step_at) AS last_step_at,
         min(s.received_at) AS first_received_at,
         COALESCE(array_agg(s.trigger_days ORDER BY s.step_at, s.received_at, s.event_id) FILTER (WHERE s.trigger_days IS NOT NULL), '{}') AS trigger_days_reached,
         (array_agg(s.due_date ORDER BY s.step_at DESC, s.received_at DESC, s.event_id DESC))[1] AS due_date,
         array_agg(s.event_id) AS step_event_ids
    FROM steps s
   GROUP BY s.contract_id, s.episode_no
), paired AS (
  -- An episode's reset: the first one received after its steps, else a reset received while no
  -- episode of the contract was open (none has steps numbered before it) just before the
  -- episode's first step, when that step fired (started_at) no later than the reset arrived. The
  -- service resets only an escalated contract, and events may arrive in another order (spec
  -- 6.1.7): such a reset overtook the webhook of a step that had already happened. A reset of an
  -- escalation the loader never saw the steps of (installed during it) precedes the next
  -- escalation's first step, which fires after it, and stays unpaired.
  SELECT e.*, COALESCE(r.event_id, early.event_id) AS reset_event_id, COALESCE(r.received_at, early.received_at) AS reset_received_at
    FROM episodes e
    LEFT JOIN resets r ON r.contract_id = e.contract_id AND r.episode_no = e.episode_no
    LEFT JOIN resets early ON r.event_id IS NULL AND early.contract_id = e.contract_id AND early.episode_no = e.episode_no - 1
                          AND early.received_at >= e.started_at
                          AND NOT EXISTS (SELECT FROM episodes p WHERE p.contract_id = e.contract_id AND p.episode_no = e.episode_no - 1)
), closed AS (
  SELECT e.*,
         CASE WHEN e.reset_received_at IS NOT NULL THEN GREATEST(e.started_at + (e.reset_received_at - e.first_received_at), e.last_step_at) END AS ended_at,
         COALESCE(listed.version, before.version) AS read_version
    FROM paired e
    CROSS JOIN LATERAL (SELECT e.reset_event_id AS event_id, e.reset_received_at AS received_at) r
    -- The first contract version the reset made the loader read.
    LEFT JOIN LATERAL (SELECT min(v.version) AS version FROM resource_versions v
                        WHERE v.resource_type = 'Contract' AND v.resource_id = e.contract_id AND NOT v.deleted
                          AND r.event_id = ANY (v.source_event_ids)) listed ON r.event_id IS NOT NULL
    -- Else the latest one caused only by webhooks received before the reset (or, without any,
    -- read before it: a backfill or reconciliation), if it was read during the episode: caused by
    -- a webhook received at or after the first step (or read after it). One read before the
    -- escalation shows the contract before it owed anything; the read the reset caused found the
    -- same content, which says the debt was gone by then, not whether before the reset or after.
    LEFT JOIN LATERAL (SELECT x.version, x.read_for
                         FROM (SELECT v.version,
                                      CASE WHEN cardinality(v.source_event_ids) > 0
                                           THEN (SELECT max(w.received_at) FROM unnest(v.source_event_ids) AS u(id) JOIN webhook_events w ON w.event_id = u.id)
                                           ELSE v.fetched_at END AS read_for
                                 FROM resource_versions v
                                WHERE v.resource_type = 'Contract' AND v.resource_id = e.contract_id AND NOT v.deleted) x
                        WHERE x.read_for <= r.received_at
                        ORDER BY x.version DESC LIMIT 1) latest ON r.event_id IS NOT NULL AND listed.version IS NULL
    CROSS JOIN LATERAL (SELECT CASE WHEN latest.read_for >= e.first_received_at THEN latest.version END AS version) before
)
SELECT c.first_event_id::text AS episode_id,
       c.contract_id,
       c.customer_id,
       c.started_at,
       c.ended_at,
       c.due_date,
       (SELECT max(d) FROM unnest(c.trigger_days_reached) AS d) AS max_trigger_days,
       c.trigger_days_reached,
       CASE WHEN c.reset_event_id IS NULL THEN 'open'
            WHEN h.balance IS NULL THEN 'unknown'
            WHEN EXISTS (SELECT FROM webhook_events w
                          WHERE w.received_at > c.reset_received_at AND w.received_at <= h.valid_from
                            -- The episode's own steps (placed) ran before the reset.
                            AND w.event_id <> ALL (c.step_event_ids)
                            AND (wh_as_text(wh_field(w.payload, 'ContractId', 'contractId', 'contractid')) = c.contract_id
                                 -- A payment of the contract, by the transaction's key (PaymentSucceeded
                                 -- and the like name only the transaction).
                                 OR EXISTS (SELECT FROM current_facts t
                                             WHERE t.resource_type = 'PaymentTransaction'
                                               AND t.resource_id = wh_as_text(wh_field(w.payload, 'PaymentTransactionId', 'paymentTransactionId', 'paymenttransactionid'))
                                               AND wh_as_text(t.fields -> 'contractid') = c.contract_id))) THEN 'unknown'
            WHEN h.balance >= 0 THEN 'paid'
            ELSE 'reset'
       END AS outcome,
       c.ended_at - c.started_at AS duration,
       c.first_received_at,
       c.reset_received_at,
       h.valid_from AS outcome_read_at
  FROM closed c
  LEFT JOIN contract_history h ON h.resource_id = c.contract_id AND h.version = c.read_version;
END;

-- The kept episodes. Business now cuts a contract's webhooks at their receipt, so its episodes
-- change when now() passes the receipt of one of them: the kept rows are each contract's episodes
-- for every span [cut_from, cut_until) of now() in which the webhooks received by then stay the
-- same, from the span the refresh fell in (cut_from: the latest receipt by then) to the one after
-- the latest receipt (cut_until 'infinity'); a contract without a webhook received in the future
-- has that one span. metric_escalation_cover has, per contract refreshed, where its first span
-- starts: a reader whose now() is earlier (a transaction begun before a webhook it did not see)
-- computes the contract's episodes instead.
CREATE TABLE metric_escalation_episode_cache AS
SELECT x.*, NULL::timestamptz AS cut_from, NULL::timestamptz AS cut_until FROM metric_escalation_episodes_in('{}', '{}') x WITH NO DATA;
CREATE INDEX metric_escalation_episode_cache_contract ON metric_escalation_episode_cache (contract_id);
CREATE TABLE metric_escalation_cover (contract_id text PRIMARY KEY, cover_from timestamptz NOT NULL);
CREATE INDEX metric_escalation_cover_from ON metric_escalation_cover (cover_from);

-- Every contract's episodes at business now, started by now: the kept ones of the span now() is
-- in, of the contracts not listed (left out by a join on their distinct ids:
-- metric_dirty_contracts, above); those of the listed ones, and of those whose kept spans start after
-- now(), computed at the read.
CREATE VIEW metric_escalation_episodes AS
SELECT e.*
  FROM (SELECT k.episode_id, k.contract_id, k.customer_id, k.started_at, k.ended_at, k.due_date, k.max_trigger_days, k.trigger_days_reached, k.outcome,
               k.duration, k.first_received_at, k.reset_received_at, k.outcome_read_at
          FROM metric_escalation_episode_cache k
          LEFT JOIN metric_dirty_episodes d ON d.contract_id = k.contract_id
         WHERE k.cut_from <= now() AND now() < k.cut_until AND d.contract_id IS NULL
        UNION ALL
        SELECT x.*
          FROM (SELECT ARRAY(SELECT contract_id FROM metric_episodes_dirty UNION SELECT contract_id FROM metric_escalation_cover WHERE cover_from > now()) AS ids) l
          -- Not called when nothing is to be computed: planning the definition costs a read about 10 ms.
          CROSS JOIN LATERAL (SELECT * FROM metric_escalation_episodes_in(l.ids, array_fill(now(), ARRAY[cardinality(l.ids)])) WHERE cardinality(l.ids) > 0) x) e
 WHERE e.started_at <= now();

-- The public form: every escalation episode started by now.
CREATE VIEW payment_escalation_episodes AS
SELECT episode_id, contract_id, customer_id, started_at, ended_at, due_date, max_trigger_days, trigger_days_reached, outcome, duration
  FROM metric_escalation_episodes;

-- Each listed dunning (metric_dunnings_dirty) the service still has, as dunning_episodes reads
-- it: its contract, customer and DocumentDate (current_facts), when the service told of it (its
-- first DunningCreated received, else its first version read) and every DunningLevel any of its
-- versions showed, ascending. metric_dunning_cache keeps every dunning's row.
CREATE VIEW metric_dunning_facts_live AS
SELECT c.resource_id AS dunning_id, wh_as_text(x.f -> 'contractid') AS contract_id, wh_as_text(x.f -> 'customerid') AS customer_id,
       wh_as_timestamptz(x.f -> 'documentdate') AS document_date,
       COALESCE((SELECT min(n.received_at) FROM metric_dunning_notice_cache n WHERE n.dunning_id = c.resource_id),
                (SELECT min(h.valid_from) FROM version_facts h WHERE h.resource_type = 'Dunning' AND h.resource_id = c.resource_id)) AS notified_at,
       ARRAY(SELECT DISTINCT lv.dunning_level
               FROM (SELECT * FROM version_facts WHERE resource_type = 'Dunning') h
               CROSS JOIN LATERAL (SELECT h.fields) AS y(f)
               -- A JSON number is an integer exactly when it has no decimals and is in range, which
               -- takes no text parsing; other values are cast as the typed columns cast them
               -- (wh_as_integer).
               CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(y.f -> 'dunninglevel') = 'number' THEN
                                                 CASE WHEN scale((y.f -> 'dunninglevel')::numeric) = 0 AND (y.f -> 'dunninglevel')::numeric BETWEEN -2147483648 AND 2147483647
                                                      THEN (y.f -> 'dunninglevel')::numeric::integer END
                                               ELSE wh_as_integer(y.f -> 'dunninglevel')
                                          END AS dunning_level) lv
              WHERE h.resource_id = c.resource_id AND lv.dunning_level IS NOT NULL
              ORDER BY 1) AS levels
  FROM (SELECT * FROM current_facts WHERE resource_type = 'Dunning' AND NOT deleted) c
  CROSS JOIN LATERAL (SELECT c.fields) AS x(f)
 WHERE c.resource_id IN (SELECT dunning_id FROM metric_dunnings_dirty);

CREATE TABLE metric_dunning_cache AS SELECT * FROM metric_dunning_facts_live WITH NO DATA;
ALTER TABLE metric_dunning_cache ADD PRIMARY KEY (dunning_id);

-- The escalation episodes each dunning of a contract with one may belong to, per span of business
-- now of its contract's kept episodes (metric_escalation_episode_cache's cut_from, cut_until):
-- every episode of the contract begun by the time the service told of the dunning and not reset
-- by then. metric_refresh_episodes keeps them for the contracts and dunnings it refreshes;
-- dunning_episodes picks at the read the latest started by now, so that it matches only the
-- dunnings listed or of a contract whose episodes it computes.
CREATE TABLE metric_dunning_match_cache (dunning_id text NOT NULL, contract_id text NOT NULL, cut_from timestamptz NOT NULL, cut_until timestamptz NOT NULL,
                                         episode_id text NOT NULL, episode_began_at timestamptz, started_at timestamptz, ended_at timestamptz, outcome text);
CREATE INDEX metric_dunning_match_cache_dunning ON metric_dunning_match_cache (dunning_id);
CREATE INDEX metric_dunning_match_cache_contract ON metric_dunning_match_cache (contract_id);
-- The rule both sides match by, the refresh's kept matches and dunning_episodes' matches at the
-- read: an episode begun by the time the service told of the dunning and not reset by then (a
-- plain expression: inlined where it is called).
CREATE FUNCTION metric_dunning_in_episode(notified_at timestamptz, first_received_at timestamptz, reset_received_at timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN first_received_at <= notified_at AND (reset_received_at IS NULL OR notified_at < reset_received_at);

-- A dunning episode: the dunning documents of a contract issued during one of its escalation
-- episodes (episode_id is that episode's), or one dunning issued outside any (episode_id is its
-- own id; it has no end the service tells, and stays open). Which episode a dunning belongs to
-- is decided on the time the service told of each (its DunningCreated received, else its first
-- version read, against the escalation's webhooks received). It starts at its first
-- DocumentDate (dunning_id is that document) and ends, with the same outcome, when its escalation
-- episode does, never before its last DocumentDate.
-- levels_reached: every DunningLevel any version of its documents showed, ascending.
CREATE VIEW dunning_episodes AS
WITH due AS MATERIALIZED (
  -- Every dunning the service still has, issued by now: the kept rows of those not listed, the
  -- listed ones' computed. The listed ones are left out of the kept rows by a join on their
  -- distinct ids (metric_dirty_contracts, above, says why: about 0.1 s at 200,000 dunnings).
  SELECT k.* FROM metric_dunning_cache k
    LEFT JOIN metric_dirty_dunnings d ON d.dunning_id = k.dunning_id
   WHERE d.dunning_id IS NULL AND COALESCE(k.document_date, k.notified_at) <= now()
  UNION ALL
  SELECT l.* FROM metric_dunning_facts_live l WHERE COALESCE(l.document_date, l.notified_at) <= now()
), computed AS MATERIALIZED (
  -- The contracts whose escalation episodes metric_escalation_episodes computes at the read.
  SELECT contract_id FROM metric_episodes_dirty UNION SELECT contract_id FROM metric_escalation_cover WHERE cover_from > now()
), matched_here AS MATERIALIZED (
  -- The due dunnings listed or of such a contract (none: not read at all).
  SELECT d.dunning_id, d.contract_id, d.notified_at
    FROM due d
   WHERE (EXISTS (SELECT FROM metric_dunnings_dirty) OR EXISTS (SELECT FROM computed))
     AND (d.dunning_id IN (SELECT dunning_id FROM metric_dunnings_dirty) OR d.contract_id IN (SELECT contract_id FROM computed))
), candidates AS (
  -- Each dunning with every escalation episode of its contract begun by the time the service told
  -- of the dunning, not reset by then and started by now: the kept matches of the span now() is
  -- in, of the dunnings not listed and the contracts not computed; the others' matched here,
  -- against their contracts' episodes only.
  SELECT m.dunning_id, m.episode_id, m.episode_began_at, m.ended_at, m.outcome
    FROM metric_dunning_match_cache m
    LEFT JOIN metric_dirty_dunnings x ON x.dunning_id = m.dunning_id
   WHERE m.cut_from <= now() AND now() < m.cut_until AND m.started_at <= now() AND x.dunning_id IS NULL
     AND NOT EXISTS (SELECT FROM computed c WHERE c.contract_id = m.contract_id)
  UNION ALL
  SELECT d.dunning_id, z.episode_id, z.first_received_at, z.ended_at, z.outcome
    FROM matched_here d
    JOIN (SELECT * FROM metric_escalation_episodes WHERE contract_id = ANY (ARRAY(SELECT contract_id FROM matched_here))) z
      ON z.contract_id = d.contract_id AND metric_dunning_in_episode(d.notified_at, z.first_received_at, z.reset_received_at)
), latest AS (
  -- Of those, the latest begun: the episode the dunning was issued in.
  SELECT DISTINCT ON (c.dunning_id) c.* FROM candidates c ORDER BY c.dunning_id, c.episode_began_at DESC
), placed AS MATERIALIZED (
  -- The due dunnings issued during an escalation episode, each in that episode.
  SELECT d.*, l.episode_id, l.episode_began_at, l.ended_at, l.outcome FROM latest l JOIN due d ON d.dunning_id = l.dunning_id
), alone AS (
  -- The others (most of them), each an episode of its own: taken as they are, not grouped.
  SELECT d.* FROM due d WHERE NOT EXISTS (SELECT FROM placed p WHERE p.dunning_id = d.dunning_id)
), firsts AS (
  SELECT DISTINCT ON (x.episode_id) x.episode_id, x.dunning_id, x.contract_id, x.customer_id, x.ended_at, x.outcome
    FROM placed x
   ORDER BY x.episode_id, COALESCE(x.document_date, x.notified_at), x.dunning_id
), members AS (
  SELECT x.episode_id, min(COALESCE(x.document_date, x.notified_at)) AS started_at, max(COALESCE(x.document_date, x.notified_at)) AS last_at,
         min(x.document_date) AS first_document_date, array_agg(x.dunning_id ORDER BY x.dunning_id) AS dunning_ids
    FROM placed x
   GROUP BY x.episode_id
), reached AS (
  SELECT x.episode_id, max(l.dunning_level) AS max_level, array_agg(DISTINCT l.dunning_level ORDER BY l.dunning_level) AS levels_reached
    FROM placed x
    CROSS JOIN LATERAL unnest(x.levels) AS l(dunning_level)
   GROUP BY x.episode_id
)
SELECT m.episode_id,
       f.dunning_id,
       f.contract_id,
       f.customer_id,
       m.started_at,
       CASE WHEN f.ended_at IS NOT NULL THEN GREATEST(f.ended_at, m.last_at) END AS ended_at,
       r.max_level,
       r.levels_reached,
       COALESCE(f.outcome, 'open') AS outcome,
       CASE WHEN f.ended_at IS NOT NULL THEN GREATEST(f.ended_at, m.last_at) - m.started_at END AS duration,
       m.dunning_ids,
       m.first_document_date
  FROM members m
  JOIN firsts f ON f.episode_id = m.episode_id
  LEFT JOIN reached r ON r.episode_id = m.episode_id
UNION ALL
-- A dunning alone: its levels are kept distinct and ascending (metric_dunning_facts_live), so
-- they are its episode's as they are (none: NULL, as the grouping above gives).
SELECT x.dunning_id,
       x.dunning_id,
       x.contract_id,
       x.customer_id,
       COALESCE(x.document_date, x.notified_at),
       NULL::timestamptz,
       x.levels[cardinality(x.levels)],
       CASE WHEN cardinality(x.levels) > 0 THEN x.levels END,
       'open',
       NULL::interval,
       ARRAY[x.dunning_id],
       x.document_date
  FROM alone x;

-- The episodes' part of metric_refresh() (which calls it first, in its snapshot): computes the
-- listed contracts' escalation episodes again with no cut and the listed dunnings' rows, puts
-- them in place of the kept ones and takes what it saw off the two lists. Returns how many
-- contracts and dunnings it refreshed. It takes metric_cache_state's row as the rest of the
-- refresh does, so two refreshes never interleave here either.
CREATE FUNCTION metric_refresh_episodes() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  seen tid[];
  seen_dunnings tid[];
  contracts text[];
  span integer;
  spans_left bigint;
  n bigint;
BEGIN
  seen := ARRAY(SELECT ctid FROM metric_episodes_dirty);
  seen_dunnings := ARRAY(SELECT ctid FROM metric_dunnings_dirty);
  IF cardinality(seen) = 0 AND cardinality(seen_dunnings) = 0 THEN
    RETURN 0;
  END IF;
  UPDATE metric_cache_state SET refreshed_at = now();
  contracts := ARRAY(SELECT DISTINCT contract_id FROM metric_episodes_dirty);
  n := cardinality(contracts) + (SELECT count(DISTINCT dunning_id) FROM metric_dunnings_dirty);
  DELETE FROM metric_escalation_episode_cache k WHERE k.contract_id IN (SELECT unnest(contracts));
  DELETE FROM metric_escalation_cover k WHERE k.contract_id IN (SELECT unnest(contracts));
  INSERT INTO metric_escalation_cover (contract_id, cover_from)
  SELECT e.contract_id, COALESCE(max(e.received_at) FILTER (WHERE e.received_at <= now()), '-infinity')
    FROM metric_escalation_event_cache e WHERE e.contract_id IN (SELECT unnest(contracts)) GROUP BY e.contract_id;
  -- The spans: the first (from cover_from), then one from each receipt after now(). The n-th
  -- span of every contract at once, each cut at its start (the first one's cut, the latest
  -- receipt by now, takes the same webhooks as now() would).
  span := 0;
  LOOP
    WITH spans AS (
      SELECT b.contract_id, b.cut_from, lead(b.cut_from, 1, 'infinity') OVER w AS cut_until, row_number() OVER w - 1 AS span_no
        FROM (SELECT c.contract_id, c.cover_from AS cut_from FROM metric_escalation_cover c WHERE c.contract_id IN (SELECT unnest(contracts))
              UNION
              SELECT e.contract_id, e.received_at FROM metric_escalation_event_cache e WHERE e.contract_id IN (SELECT unnest(contracts)) AND e.received_at > now()) b
      WINDOW w AS (PARTITION BY b.contract_id ORDER BY b.cut_from)
    ), these AS (
      SELECT * FROM spans WHERE span_no = span
    ), computed AS (
      INSERT INTO metric_escalation_episode_cache
      SELECT x.*, t.cut_from, t.cut_until
        FROM metric_escalation_episodes_in(ARRAY(SELECT contract_id FROM these ORDER BY contract_id), ARRAY(SELECT cut_from FROM these ORDER BY contract_id)) x
        JOIN these t ON t.contract_id = x.contract_id
    )
    SELECT count(*) INTO spans_left FROM these;
    EXIT WHEN spans_left = 0;
    span := span + 1;
  END LOOP;
  DELETE FROM metric_episodes_dirty WHERE ctid = ANY (seen);
  DELETE FROM metric_dunning_cache k WHERE k.dunning_id IN (SELECT dunning_id FROM metric_dunnings_dirty);
  INSERT INTO metric_dunning_cache SELECT * FROM metric_dunning_facts_live;
  -- The matches of the refreshed contracts' dunnings and of the refreshed dunnings, over every kept
  -- span of their contracts' episodes (two semi-joins, not one OR of two: an OR makes each a
  -- subplan, which at the fill's 250,000 listed dunnings is no longer hashed).
  DELETE FROM metric_dunning_match_cache m WHERE m.contract_id IN (SELECT unnest(contracts));
  DELETE FROM metric_dunning_match_cache m WHERE m.dunning_id IN (SELECT dunning_id FROM metric_dunnings_dirty);
  INSERT INTO metric_dunning_match_cache
  SELECT d.dunning_id, d.contract_id, z.cut_from, z.cut_until, z.episode_id, z.first_received_at, z.started_at, z.ended_at, z.outcome
    FROM (SELECT k.dunning_id FROM metric_dunning_cache k WHERE k.contract_id IN (SELECT unnest(contracts))
          UNION
          SELECT dunning_id FROM metric_dunnings_dirty) r
    JOIN metric_dunning_cache d ON d.dunning_id = r.dunning_id
    JOIN metric_escalation_episode_cache z ON z.contract_id = d.contract_id AND metric_dunning_in_episode(d.notified_at, z.first_received_at, z.reset_received_at);
  DELETE FROM metric_dunnings_dirty WHERE ctid = ANY (seen_dunnings);
  RETURN n;
END
$$;

-- The writer role runs the triggers (it appends) and the refresh (the sink).
GRANT SELECT, INSERT, DELETE ON metric_episodes_dirty, metric_dunnings_dirty, metric_escalation_event_cache, metric_dunning_notice_cache,
                                metric_episode_sources_pending, metric_escalation_episode_cache, metric_escalation_cover, metric_dunning_cache,
                                metric_dunning_match_cache TO billing_loader_writer;

-- Each listed payment transaction (metric_payments_dirty, the trigger at the top of this file) the
-- service still has, as payment_outcomes reads it: its status (Status.Status, lower case), Amount,
-- Currency, provider and the time of its status (StatusTimestamp, else the Status object's
-- Timestamp). metric_payment_cache keeps every transaction's row, refreshed like the contracts'.
CREATE VIEW metric_payment_facts_live AS
SELECT c.resource_id AS transaction_id,
       lower(wh_as_text(wh_field(x.f -> 'status', 'Status', 'status', 'status'))) AS status, wh_as_numeric(x.f -> 'amount') AS amount,
       wh_as_text(x.f -> 'currency') AS currency, wh_as_text(x.f -> 'paymentprovider') AS provider,
       COALESCE(wh_as_timestamptz(x.f -> 'statustimestamp'), wh_as_timestamptz(wh_field(x.f -> 'status', 'Timestamp', 'timestamp', 'timestamp'))) AS at
  FROM (SELECT * FROM current_facts WHERE resource_type = 'PaymentTransaction' AND NOT deleted) c
  CROSS JOIN LATERAL (SELECT c.fields) AS x(f)
 WHERE c.resource_id IN (SELECT transaction_id FROM metric_payments_dirty);

CREATE TABLE metric_payment_cache AS SELECT * FROM metric_payment_facts_live WITH NO DATA;
ALTER TABLE metric_payment_cache ADD PRIMARY KEY (transaction_id);

-- Payment transactions by their current state, per UTC day of their status (StatusTimestamp,
-- else the Status object's Timestamp), provider and currency, for statuses dated by now:
-- Succeeded and Failed ones (Status.Status; other statuses, e.g. Pending, are not counted).
-- Amounts are the transactions' Amount: what was charged, VAT included. From the kept rows and
-- the listed transactions' live ones (the listed ones left out of the kept rows by a join on
-- their distinct ids: metric_dirty_contracts, above, says why).
CREATE VIEW payment_outcomes AS
SELECT (t.at AT TIME ZONE 'UTC')::date AS day,
       t.provider,
       t.currency,
       count(*) FILTER (WHERE t.status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE t.status = 'failed') AS failed,
       COALESCE(sum(t.amount) FILTER (WHERE t.status = 'succeeded'), 0) AS succeeded_amount,
       COALESCE(sum(t.amount) FILTER (WHERE t.status = 'failed'), 0) AS failed_amount
  FROM (SELECT k.* FROM metric_payment_cache k
          LEFT JOIN metric_dirty_payments d ON d.transaction_id = k.transaction_id
         WHERE d.transaction_id IS NULL
        UNION ALL
        SELECT * FROM metric_payment_facts_live) t
 WHERE t.status IN ('succeeded', 'failed') AND t.at <= now()
 GROUP BY 1, 2, 3;

-- What the dashboard asks before its charts, from the kept rows by index (the listed contracts'
-- and payments' live rows beside them), so that it costs milliseconds whatever the history's size.
--   metric_dashboard_range      one row: from the first contract's StartDate or first day of
--                               payment_outcomes to the latest contract date (start, end) or day of
--                               payment_outcomes that has come, to today while a contract runs
--   metric_contract_currencies  the currencies of the contracts with a StartDate the service still
--                               has (the contracts the MRR views price), and how many each
CREATE INDEX metric_contract_cache_start ON metric_contract_cache (start_date) WHERE NOT deleted;
CREATE INDEX metric_contract_cache_end ON metric_contract_cache (end_date) WHERE NOT deleted;
CREATE INDEX metric_contract_cache_currency ON metric_contract_cache (currency) WHERE NOT deleted;
CREATE INDEX metric_payment_cache_at ON metric_payment_cache (at) WHERE status IN ('succeeded', 'failed');

-- The dashboard's movements chart: subscription_movements' day, movement and contracts, without
-- the contract ids, from per-day counts kept at write time. A movement row counts for good once
-- counts_from has come and it has no counts_until; those with counts_from before
-- metric_cache_state.movements_settled_before (S) are counted in metric_movement_day_cache, per
-- UTC day and movement, each contract once. The refresh moves those counts by the listed
-- contracts' difference (metric_movement_move_counts) and counts them all again at now() once S
-- is a day old (metric_settle_movements), so that what is read at each read stays about a day's
-- movements. The view adds up: the kept counts; less the listed contracts' kept rows in them;
-- the kept rows of the other contracts that were not settled at S (still to come, or counted
-- only until a moment after S) and count now, each contract once a day and movement (not when a
-- settled row of its already counts there); and the listed contracts' live rows. A reader whose
-- now() is before S (a transaction begun before the refresh that settled) gets
-- subscription_movements' counts instead.
CREATE TABLE metric_movement_day_cache (day date NOT NULL, movement text NOT NULL, contracts bigint NOT NULL, PRIMARY KEY (day, movement));
CREATE INDEX metric_movement_cache_counts_from ON metric_movement_cache (counts_from);
CREATE INDEX metric_movement_cache_counts_until ON metric_movement_cache (counts_until);

-- A kept movement row counts for good before `before`: it has come by then and counts without
-- end. The one definition of "settled" for the view, the refresh's moves and the settling (a
-- plain expression: inlined where it is called, so the index conditions stay the same).
CREATE FUNCTION metric_movement_settled(counts_from timestamptz, counts_until timestamptz, before timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN counts_until IS NULL AND counts_from < before;

CREATE VIEW metric_movement_counts AS
WITH settled AS (SELECT movements_settled_before AS before FROM metric_cache_state)
SELECT x.day, x.movement, sum(x.contracts)::bigint AS contracts
  FROM (
    SELECT day, movement, contracts FROM metric_movement_day_cache
    UNION ALL
    SELECT (k.at AT TIME ZONE 'UTC')::date, k.movement, -count(DISTINCT k.contract_id)
      FROM metric_movement_cache k JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
     WHERE metric_movement_settled(k.counts_from, k.counts_until, (SELECT before FROM settled))
     GROUP BY 1, 2
    UNION ALL
    SELECT (u.at AT TIME ZONE 'UTC')::date, u.movement, count(DISTINCT u.contract_id)
      FROM (SELECT k.contract_id, k.movement, k.at
              FROM metric_movement_cache k LEFT JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
             WHERE d.contract_id IS NULL
               AND (k.counts_from >= (SELECT before FROM settled) OR k.counts_until > (SELECT before FROM settled))
               AND metric_movement_counts_at(k.counts_from, k.counts_until, now())
               -- Looked up by the contract's index for each of these few rows (OFFSET 0 keeps the
               -- planner from making it a hash anti-join over every settled row: 0.36 s at 10 M).
               AND NOT EXISTS (SELECT FROM metric_movement_cache o
                                WHERE o.contract_id = k.contract_id AND o.movement = k.movement
                                  AND (o.at AT TIME ZONE 'UTC')::date = (k.at AT TIME ZONE 'UTC')::date
                                  AND metric_movement_settled(o.counts_from, o.counts_until, (SELECT before FROM settled))
                               OFFSET 0)
            UNION ALL
            SELECT contract_id, movement, at FROM metric_contract_movements_live
             WHERE metric_movement_counts_at(counts_from, counts_until, now())) u
     GROUP BY 1, 2
  ) x
 WHERE (SELECT before FROM settled) <= now()
 GROUP BY 1, 2
HAVING sum(x.contracts) > 0
UNION ALL
SELECT day, movement, contracts FROM subscription_movements WHERE (SELECT movements_settled_before FROM metric_cache_state) > now();

-- The listed contracts' kept movements counted for good before S, added to (sign 1) or taken off
-- (-1) metric_movement_day_cache: the refresh takes off their old rows' before it replaces them
-- and adds the new ones' after.
CREATE FUNCTION metric_movement_move_counts(sign integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO metric_movement_day_cache AS c (day, movement, contracts)
  SELECT (k.at AT TIME ZONE 'UTC')::date, k.movement, sign * count(DISTINCT k.contract_id)
    FROM metric_movement_cache k JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
   WHERE metric_movement_settled(k.counts_from, k.counts_until, (SELECT movements_settled_before FROM metric_cache_state))
   GROUP BY 1, 2
   ORDER BY 1, 2
  ON CONFLICT (day, movement) DO UPDATE SET contracts = c.contracts + EXCLUDED.contracts;
  DELETE FROM metric_movement_day_cache WHERE contracts = 0;
END
$$;

-- Every kept movement counted for good before `before`, counted again from metric_movement_cache
-- (the listed contracts' kept rows too, as metric_movement_move_counts expects), and S set to it.
CREATE FUNCTION metric_settle_movements(before timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM metric_movement_day_cache;
  INSERT INTO metric_movement_day_cache (day, movement, contracts)
  SELECT (at AT TIME ZONE 'UTC')::date, movement, count(DISTINCT contract_id)
    FROM metric_movement_cache
   WHERE metric_movement_settled(counts_from, counts_until, before)
   GROUP BY 1, 2;
  UPDATE metric_cache_state SET movements_settled_before = before;
END
$$;

CREATE VIEW metric_dashboard_range AS
WITH live AS MATERIALIZED (SELECT start_date, end_date FROM metric_contract_facts_live WHERE NOT deleted),
     paid AS MATERIALIZED (SELECT at FROM metric_payment_facts_live WHERE status IN ('succeeded', 'failed') AND at <= now()),
     -- NOT MATERIALIZED: each use below is planned on its own, by its index.
     kept AS NOT MATERIALIZED (SELECT k.start_date, k.end_date FROM metric_contract_cache k
               WHERE NOT k.deleted AND NOT EXISTS (SELECT FROM metric_contracts_dirty d WHERE d.contract_id = k.contract_id)),
     kept_paid AS NOT MATERIALIZED (SELECT k.at FROM metric_payment_cache k
                    WHERE k.status IN ('succeeded', 'failed') AND k.at <= now()
                      AND NOT EXISTS (SELECT FROM metric_payments_dirty d WHERE d.transaction_id = k.transaction_id)),
     bounds AS (
  -- Each kept bound is the first row of an index in order (ORDER BY ... LIMIT 1).
  SELECT least((SELECT start_date FROM kept ORDER BY start_date LIMIT 1), (SELECT min(start_date) FROM live)) AS first_start,
         greatest((SELECT start_date FROM kept WHERE start_date <= now() ORDER BY start_date DESC LIMIT 1),
                  (SELECT max(start_date) FROM live WHERE start_date <= now()),
                  (SELECT end_date FROM kept WHERE end_date <= now() ORDER BY end_date DESC LIMIT 1),
                  (SELECT max(end_date) FROM live WHERE end_date <= now())) AS last_date,
         EXISTS (SELECT FROM kept WHERE end_date IS NULL AND start_date <= now())
           OR EXISTS (SELECT FROM kept WHERE end_date > now() AND start_date <= now())
           OR EXISTS (SELECT FROM live WHERE start_date <= now() AND (end_date IS NULL OR end_date > now())) AS running,
         least((SELECT at FROM kept_paid ORDER BY at LIMIT 1), (SELECT min(at) FROM paid)) AS first_paid,
         greatest((SELECT at FROM kept_paid ORDER BY at DESC LIMIT 1), (SELECT max(at) FROM paid)) AS last_paid)
SELECT least((first_start AT TIME ZONE 'UTC')::date, (first_paid AT TIME ZONE 'UTC')::date) AS first_day,
       greatest((last_date AT TIME ZONE 'UTC')::date, (last_paid AT TIME ZONE 'UTC')::date,
                CASE WHEN running THEN (now() AT TIME ZONE 'UTC')::date END) AS last_day
  FROM bounds;

-- The kept rows counted by currency less the listed contracts' kept rows, plus their live rows;
-- the currency's form is checked on the few totals (MATERIALIZED: pushed into the branches, the
-- check ran on every row).
CREATE VIEW metric_contract_currencies AS
WITH counts AS MATERIALIZED (
  SELECT c.currency, sum(c.n)::bigint AS contracts
    FROM (SELECT currency, count(*) AS n FROM metric_contract_cache WHERE NOT deleted GROUP BY 1
          UNION ALL
          SELECT k.currency, -count(*) FROM metric_contract_cache k
           WHERE NOT k.deleted AND k.contract_id IN (SELECT contract_id FROM metric_contracts_dirty) GROUP BY 1
          UNION ALL
          SELECT currency, count(*) FROM metric_contract_facts_live WHERE NOT deleted GROUP BY 1) c
   GROUP BY 1)
SELECT currency, contracts FROM counts WHERE contracts > 0 AND currency ~ '^[A-Z]{3}$';

-- The loader's own health per minute, on the load-side clocks: webhooks by ingress receipt,
-- versions by loaded_at (counted at write time: version_load_minutes and version_load_deltas,
-- migration 0024), and freshness: for each version caused by webhooks, the seconds from the
-- earliest of them received to the version loaded (percentiles over the minute's versions caused
-- by webhooks; the others have none).
-- dead_letters: the records of the DLQ topics given up in that minute (by any stage; the sink
-- copies each into dead_letters, migration 0017).
CREATE VIEW pipeline_health AS
-- Minutes in UTC with an explicit zone: migrations 0006 and 0024 index exactly these expressions,
-- so a filter on minute (the dashboard's last hours) reads only those minutes' index entries and
-- kept counts, and the whole view reads the indexes in minute order instead of every version and
-- webhook. A backfill's versions (no source events) are counted, never read. A UTC minute is the
-- minute in any zone whose offset is whole minutes.
SELECT m.minute,
       sum(m.webhooks)::bigint AS webhooks,
       sum(m.versions)::bigint AS versions,
       max(m.freshness[1]) AS freshness_p50_s,
       max(m.freshness[2]) AS freshness_p99_s,
       sum(m.dead_letters)::bigint AS dead_letters
  FROM (SELECT date_trunc('minute', w.received_at, 'UTC') AS minute, count(*) AS webhooks, 0::bigint AS versions, NULL::float8[] AS freshness, 0::bigint AS dead_letters
          FROM webhook_events w
         GROUP BY 1
        UNION ALL
        SELECT date_trunc('minute', d.failed_at, 'UTC'), 0, 0, NULL, count(*)
          FROM dead_letters d
         GROUP BY 1
        UNION ALL
        SELECT k.minute, 0, k.versions, NULL, 0 FROM version_load_minutes k
        UNION ALL
        SELECT k.minute, 0, k.versions, NULL, 0 FROM version_load_deltas k
        UNION ALL
        -- Both percentiles from one aggregate, so each version's sources are looked up once. The
        -- filter is the predicate of 0024's partial index.
        SELECT date_trunc('minute', r.loaded_at, 'UTC'),
               0,
               0,
               percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (
                 ORDER BY extract(epoch FROM r.loaded_at - (SELECT min(w.received_at) FROM unnest(r.source_event_ids) AS e(id) JOIN webhook_events w ON w.event_id = e.id))::float8),
               0
          FROM resource_versions r
         WHERE cardinality(r.source_event_ids) > 0
         GROUP BY 1) m
 GROUP BY m.minute;

-- The latest UTC minute pipeline_health has a row for, from the same minute indexes and kept
-- counts (the greatest of their maxima, each the last entry of an index; the deltas are the few
-- rows not folded yet), without computing the view: where a reader of the latest hours starts
-- when nothing was loaded in the last ones.
CREATE VIEW metric_pipeline_last_minute AS
SELECT GREATEST((SELECT max(date_trunc('minute', w.received_at, 'UTC')) FROM webhook_events w),
                (SELECT max(date_trunc('minute', d.failed_at, 'UTC')) FROM dead_letters d),
                (SELECT max(k.minute) FROM version_load_minutes k),
                (SELECT max(k.minute) FROM version_load_deltas k)) AS minute;

-- MRR in money (docs/WAREHOUSE.md#mrr-in-money). A contract's MRR on a day is the recurring fee
-- of the plan variant of its Normal phase in force at the end of that UTC day, normalised to a
-- month and times the phase's Quantity, in the contract's Currency; nothing in a Trial or
-- Inactive phase, before the StartDate, or once the EndDate has come (a cancelled contract pays
-- until its EndDate). Component subscriptions and discounts are not read by the loader (the
-- service serves them under their own paths), so they are not in it. The phases are read by
-- metric_mrr_phases, at the top of this file.

-- Each plan variant's prices over time: RecurringFee per FeePeriod {Unit, Quantity} as a monthly
-- fee (Month: / Quantity; Year: / 12 Quantity; Week: x 52 / 12 Quantity; Day: x 365 / 12
-- Quantity; another unit: NULL, unpriced). The service dates no price change: a version is in
-- force from when the loader read it (valid_from; a live loader reads it seconds after
-- PlanVariantChanged), and the first version read also for all time before it. A deleted
-- variant keeps its last price for the contracts still on it.
CREATE VIEW metric_plan_variant_prices AS
SELECT v.resource_id AS plan_variant_id,
       v.version,
       CASE WHEN row_number() OVER w = 1 THEN '-infinity'::timestamptz ELSE v.valid_from END AS price_from,
       COALESCE(lead(v.valid_from) OVER w, 'infinity'::timestamptz) AS price_until,
       v.recurring_fee,
       v.fee_period_unit,
       v.fee_period_quantity,
       v.recurring_fee
         * CASE lower(v.fee_period_unit) WHEN 'month' THEN 1 WHEN 'year' THEN 1 WHEN 'week' THEN 52 WHEN 'day' THEN 365 END
         / (CASE lower(v.fee_period_unit) WHEN 'month' THEN 1 ELSE 12 END * NULLIF(COALESCE(v.fee_period_quantity, 1), 0)) AS monthly_fee
  FROM plan_variant_history v
 WHERE NOT v.deleted
WINDOW w AS (PARTITION BY v.resource_id ORDER BY v.version);

-- The paying spans: each Normal phase with a PlanVariantId of a contract with a StartDate that the
-- service still has (its latest version; metric_contract_lifecycle), from its start to the start
-- of the next phase (phases starting together: the later listed one is in force) or the EndDate,
-- whichever comes first (ends_at NULL: neither is known). quantity: the phase's Quantity, 1 if
-- absent. A moment `at` is in a span when starts_at < at <= ends_at: the state just before `at`,
-- so that "the end of a day" is the next midnight. metric_mrr_spans_live has the listed
-- contracts' (metric_contracts_dirty) spans, the future ones too; metric_mrr_span_cache the kept
-- ones; metric_mrr_spans every contract's spans started by now.
CREATE VIEW metric_mrr_spans_live AS
WITH phases AS (
  SELECT k.contract_id, k.customer_id, k.currency, k.end_date, p.phase_type, p.starts_at, p.plan_id, p.plan_variant_id, p.quantity,
         lead(p.starts_at) OVER (PARTITION BY k.contract_id ORDER BY p.starts_at, p.n) AS next_starts_at
    FROM metric_contract_facts_live k
    CROSS JOIN LATERAL metric_mrr_phases(k.phases) p
   WHERE NOT k.deleted AND p.starts_at IS NOT NULL
)
SELECT contract_id, customer_id, currency, plan_id, plan_variant_id, COALESCE(quantity, 1) AS quantity, starts_at,
       LEAST(next_starts_at, end_date) AS ends_at
  FROM phases
 WHERE phase_type = 'normal' AND plan_variant_id IS NOT NULL
   AND (LEAST(next_starts_at, end_date) IS NULL OR LEAST(next_starts_at, end_date) > starts_at);

CREATE TABLE metric_mrr_span_cache AS SELECT * FROM metric_mrr_spans_live WITH NO DATA;
CREATE INDEX metric_mrr_span_cache_contract ON metric_mrr_span_cache (contract_id);
-- By customer (the MRR months of some customers) and by either end (the spans that start or end
-- between now and the end of the running month: metric_mrr_live_customers).
CREATE INDEX metric_mrr_span_cache_customer ON metric_mrr_span_cache (customer_id);
CREATE INDEX metric_mrr_span_cache_starts ON metric_mrr_span_cache (starts_at);
CREATE INDEX metric_mrr_span_cache_ends ON metric_mrr_span_cache (ends_at);
-- And by plan variant (the customers on a listed one).
CREATE INDEX metric_mrr_span_cache_variant ON metric_mrr_span_cache (plan_variant_id);

-- Every contract's paying spans, the future ones too (the kept ones of the contracts not listed,
-- left out by a join on their distinct ids: metric_dirty_contracts, above; and the live ones of
-- the listed); metric_mrr_spans: those started by now.
CREATE VIEW metric_mrr_spans_all AS
SELECT k.* FROM metric_mrr_span_cache k
  LEFT JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
 WHERE d.contract_id IS NULL
UNION ALL
SELECT * FROM metric_mrr_spans_live;

CREATE VIEW metric_mrr_spans AS
SELECT * FROM metric_mrr_spans_all WHERE starts_at < now();

-- The analyst's rates as spans: each row from its valid_from to the next row's of the currency.
CREATE VIEW metric_fx_rates AS
SELECT currency, valid_from, lead(valid_from) OVER (PARTITION BY currency ORDER BY valid_from) AS valid_until, rate_to_reporting
  FROM fx_rates;

-- The rate of each currency and month that the monthly views use: the row valid on the month's
-- end day (today for the running month), for every month from the first rate's to the running
-- one; a month before a currency's first rate has no row. Joined by equality on (currency, month),
-- once per month instead of once per customer-month; a function so that the planner expects a
-- few rows (ROWS 100) and hashes them, rather than sorting every customer-month to merge with a
-- calendar it guesses at a thousand months (fx_rates, filled by hand, is seldom analyzed).
CREATE FUNCTION metric_fx_month_rates() RETURNS TABLE (currency text, month date, rate_to_reporting numeric)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 100
BEGIN ATOMIC
  SELECT f.currency, m.month, f.rate_to_reporting
    FROM (SELECT d::date AS month, LEAST((d + interval '1 month - 1 day')::date, (now() AT TIME ZONE 'UTC')::date) AS end_day
            FROM generate_series((SELECT date_trunc('month', min(x.valid_from)) FROM fx_rates x), date_trunc('month', now() AT TIME ZONE 'UTC'), interval '1 month') AS d) m
    JOIN metric_fx_rates f ON f.valid_from <= m.end_day AND (f.valid_until IS NULL OR m.end_day < f.valid_until);
END;

-- One row per contract and UTC day with a paying span in force at the end of the day (at now()
-- for today), up to today. mrr: the variant's monthly fee in force then x the quantity, in
-- `currency`; NULL when the variant was never read or its period unit is unknown (and then left
-- out of every sum below). rate_to_reporting: the fx_rates row of the currency valid on that day;
-- mrr_reporting: mrr x that rate (NULL without one). The days are a calendar (from the first
-- span's day to today) joined to the spans in force, so that a filter on day reads that day's
-- spans by the kept spans' index on their start, not every span's days.
CREATE VIEW mrr_daily AS
SELECT x.day,
       s.contract_id,
       s.customer_id,
       s.currency,
       s.plan_id,
       s.plan_variant_id,
       s.quantity,
       p.monthly_fee * s.quantity AS mrr,
       f.rate_to_reporting,
       p.monthly_fee * s.quantity * f.rate_to_reporting AS mrr_reporting
  FROM (SELECT d::date AS day, LEAST((d + interval '1 day') AT TIME ZONE 'UTC', now()) AS at
          FROM generate_series((SELECT date_trunc('day', min(m.starts_at) AT TIME ZONE 'UTC') FROM metric_mrr_spans m),
                               (now() AT TIME ZONE 'UTC')::date::timestamp, interval '1 day') AS d) x
  JOIN metric_mrr_spans s ON s.starts_at < x.at AND (s.ends_at IS NULL OR s.ends_at >= x.at)
  LEFT JOIN metric_plan_variant_prices p ON p.plan_variant_id = s.plan_variant_id AND p.price_from < x.at AND x.at <= p.price_until
  LEFT JOIN metric_fx_rates f ON f.currency = s.currency AND f.valid_from <= x.day AND (f.valid_until IS NULL OR x.day < f.valid_until);

-- MRR per customer and month (docs/WAREHOUSE.md, "MRR in money"). A customer's MRR in a month is
-- the sum, over its paying spans in force at the end of the month (its last day, or now() for the
-- running month: the same rule as mrr_daily, evaluated at month ends only), of the variant's
-- monthly fee then x the quantity, per currency. Its movement against the previous month's end is
-- ChartMogul's (https://help.chartmogul.com/hc/en-us/articles/203299912): new (from nothing, never
-- any MRR before), reactivation (from nothing, some MRR in an earlier month), expansion,
-- contraction, churn (to nothing), unchanged.
CREATE FUNCTION metric_mrr_movement(previous_mrr numeric, mrr numeric, paid_before boolean) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN previous_mrr = 0 AND mrr > 0 THEN CASE WHEN paid_before THEN 'reactivation' ELSE 'new' END
            WHEN previous_mrr > 0 AND mrr = 0 THEN 'churn'
            WHEN mrr > previous_mrr THEN 'expansion'
            WHEN mrr < previous_mrr THEN 'contraction'
            ELSE 'unchanged'
       END;

-- The months of the customers named (a NULL in the array: the spans without a customer), up to
-- the month `through`, each evaluated at the earlier of its end and `cap`: one row per customer,
-- currency and month in which the customer had MRR at the month's end or at the previous
-- month's end (the month after the last one with MRR: churn, mrr 0). previous_mrr: the MRR at
-- the previous month's end (0 when it had none); paid_before: some MRR in an earlier month. The
-- views call it with cap now() and the running month (what the views show); the refresh with cap
-- 'infinity' and the last month kept (what is kept: each month at its end). Security definer:
-- the views call it for the analyst, who may not read the kept rows; its body names every object
-- it reads (bound when created).
CREATE FUNCTION metric_mrr_customer_months_in(customer_ids text[], cap timestamptz, through date)
RETURNS TABLE (month date, customer_id text, currency text, previous_mrr numeric, mrr numeric, paid_before boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  -- The customers' spans: a join on the ids (= ANY of an array parameter would compare each span
  -- with every id), and the spans without a customer when the array holds a NULL. Once
  -- (MATERIALIZED): the planner, which cannot tell how many ids an array holds, would otherwise
  -- read them again for every plan variant.
  WITH spans AS MATERIALIZED (
    SELECT a.* FROM metric_mrr_spans_all a WHERE a.customer_id IN (SELECT u.id FROM unnest(customer_ids) AS u(id))
    UNION ALL
    SELECT a.* FROM metric_mrr_spans_all a WHERE a.customer_id IS NULL AND array_position(customer_ids, NULL) IS NOT NULL
  ), snapshots AS (
    -- Without trailing zeros (a fee over its period in months has 16 decimals): the same amount,
    -- a shorter text for every row handed out and shorter operands for the rate's products.
    SELECT x.month, s.customer_id, s.currency, trim_scale(sum(p.monthly_fee * s.quantity)) AS mrr
      FROM spans s
      CROSS JOIN LATERAL (SELECT m::date AS month, LEAST((m + interval '1 month') AT TIME ZONE 'UTC', cap) AS at
                            FROM generate_series(date_trunc('month', s.starts_at AT TIME ZONE 'UTC'),
                                                 LEAST(date_trunc('month', LEAST(s.ends_at, cap) AT TIME ZONE 'UTC'), through::timestamp),
                                                 interval '1 month') AS m) x
      JOIN metric_plan_variant_prices p ON p.plan_variant_id = s.plan_variant_id AND p.price_from < x.at AND x.at <= p.price_until
     WHERE s.starts_at < x.at AND (s.ends_at IS NULL OR s.ends_at >= x.at) AND p.monthly_fee IS NOT NULL
     GROUP BY 1, 2, 3
    HAVING sum(p.monthly_fee * s.quantity) > 0
  ), sequenced AS (
    SELECT s.*, lag(s.month) OVER w AS previous_month, lag(s.mrr) OVER w AS previous_month_mrr, lead(s.month) OVER w AS next_month, row_number() OVER w AS n
      FROM snapshots s
    WINDOW w AS (PARTITION BY s.customer_id, s.currency ORDER BY s.month)
  )
  SELECT q.month, q.customer_id, q.currency,
         CASE WHEN q.previous_month = (q.month - interval '1 month')::date THEN q.previous_month_mrr ELSE 0 END,
         q.mrr,
         q.n > 1
    FROM sequenced q
  UNION ALL
  -- The month after the last month with MRR: churn.
  SELECT (q.month + interval '1 month')::date, q.customer_id, q.currency, q.mrr, 0, true
    FROM sequenced q
   WHERE q.next_month IS DISTINCT FROM (q.month + interval '1 month')::date
     AND q.month + interval '1 month' <= through;
END;

-- Kept: every customer's months, each at its end, up to metric_cache_state.mrr_through (the month
-- after the running one when the refresh ran: a month's rows are there before it begins).
CREATE TABLE metric_mrr_customer_cache (month date NOT NULL, customer_id text, currency text, previous_mrr numeric NOT NULL, mrr numeric NOT NULL, paid_before boolean NOT NULL);
CREATE INDEX metric_mrr_customer_cache_customer ON metric_mrr_customer_cache (customer_id);
CREATE INDEX metric_mrr_customer_cache_month ON metric_mrr_customer_cache (month);

-- The customers whose kept months the refresh computes again: those of the listed contracts' spans
-- as kept (a contract may have changed customer) and as they are now, and those with a span on a
-- listed plan variant (metric_variants_dirty: its price may have changed).
CREATE VIEW metric_mrr_dirty_customers AS
SELECT k.customer_id FROM metric_mrr_span_cache k JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
UNION
SELECT l.customer_id FROM metric_mrr_spans_live l
UNION
SELECT s.customer_id FROM metric_mrr_spans_all s WHERE s.plan_variant_id IN (SELECT v.plan_variant_id FROM metric_variants_dirty v);

-- The customers a read computes from the spans instead of taking their kept months: the listed
-- ones above; those whose running month differs between now and the month's end, for a span
-- that starts or ends, or a price that changes, in between (the kept running month is at its
-- end); and every customer when the kept months do not reach the running month (the refresh has
-- not run since it began).
CREATE VIEW metric_mrr_live_customers AS
WITH m AS (
  SELECT now() AS now, (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC' AS month_end,
         (SELECT c.mrr_through FROM metric_cache_state c) < date_trunc('month', now() AT TIME ZONE 'UTC')::date AS stale
)
SELECT d.customer_id FROM metric_mrr_dirty_customers d
UNION
SELECT k.customer_id FROM metric_mrr_span_cache k, m WHERE k.starts_at BETWEEN m.now AND m.month_end
UNION
SELECT k.customer_id FROM metric_mrr_span_cache k, m WHERE k.ends_at BETWEEN m.now AND m.month_end
UNION
SELECT s.customer_id FROM metric_mrr_spans_all s JOIN metric_plan_variant_prices p ON p.plan_variant_id = s.plan_variant_id, m
 WHERE p.price_from BETWEEN m.now AND m.month_end
UNION
SELECT s.customer_id FROM metric_mrr_spans_all s WHERE (SELECT m.stale FROM m)
UNION
SELECT k.customer_id FROM metric_mrr_customer_cache k WHERE (SELECT m.stale FROM m);

-- metric_mrr_live_customers as a function the planner expects a thousand rows of. The view's own
-- estimate counts its branches for a refresh that has not run since the month began (every
-- customer: millions at 10,000,000 versions), where a read finds a few thousand; hashing them for
-- millions splits the anti-join below into batches on disk. When that refresh is due, the
-- hash grows as it goes.
CREATE FUNCTION metric_mrr_live_customer_ids() RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1000
BEGIN ATOMIC
  SELECT customer_id FROM metric_mrr_live_customers;
END;

-- Every customer's months up to the running one, as of now(): the kept ones of the customers not
-- in metric_mrr_live_customers, the others computed at the read.
CREATE VIEW metric_mrr_customer_months AS
WITH live AS MATERIALIZED (
  SELECT l.id AS customer_id FROM metric_mrr_live_customer_ids() AS l(id)
), running AS (
  SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date AS month
)
SELECT k.month, k.customer_id, k.currency, k.previous_mrr, k.mrr, k.paid_before
  FROM metric_mrr_customer_cache k
 WHERE k.month <= (SELECT month FROM running)
   AND NOT EXISTS (SELECT FROM live l WHERE l.customer_id = k.customer_id)
   AND NOT (k.customer_id IS NULL AND EXISTS (SELECT FROM live l WHERE l.customer_id IS NULL))
UNION ALL
SELECT c.month, c.customer_id, c.currency, c.previous_mrr, c.mrr, c.paid_before
  FROM metric_mrr_customer_months_in(ARRAY(SELECT customer_id FROM live), now(), (SELECT month FROM running)) c;

-- One row per customer, currency and UTC month in which the customer had MRR at the month's end
-- or at the previous month's end, up to the running month (metric_mrr_customer_months): the MRR
-- then, the previous month's end's, and the movement (above). amount: mrr - previous_mrr
-- (negative for contraction and churn). Reporting currency: every amount of the row at the rate
-- valid on the month's end day (today for the running month), so a rate change moves no
-- customer; the MRR of consecutive months differs from their movements by the rate change alone.
CREATE VIEW mrr_movements AS
SELECT r.month,
       r.customer_id,
       r.currency,
       r.previous_mrr,
       r.mrr,
       metric_mrr_movement(r.previous_mrr, r.mrr, r.paid_before) AS movement,
       r.mrr - r.previous_mrr AS amount,
       f.rate_to_reporting,
       r.previous_mrr * f.rate_to_reporting AS previous_mrr_reporting,
       r.mrr * f.rate_to_reporting AS mrr_reporting,
       (r.mrr - r.previous_mrr) * f.rate_to_reporting AS amount_reporting
  FROM metric_mrr_customer_months r
  LEFT JOIN metric_fx_month_rates() f ON f.currency = r.currency AND f.month = r.month;

-- What mrr_monthly adds up, per month: per currency (all_currencies false; currency NULL: the
-- contracts without one) the customer-months, MRR, paying customers, the five movements'
-- amounts, the starting MRR, the retained MRR (NRR's numerator: the MRR of the customers paying
-- at the previous month's end) and the retained gross MRR (GRR's: each capped at its starting
-- MRR), the starting customers and, of those, the churned; and once per month over all
-- currencies (all_currencies true) the customers counted once whatever their currencies: the
-- customer-months, paying, starting and churned customers (the amounts 0). Of the months of the
-- customers named up to `through`: the kept ones (kept true) or as computed with `cap` (false).
-- Every column adds up: the sums of a set of customers are the sums of its parts.
CREATE FUNCTION metric_mrr_month_sums(customer_ids text[], cap timestamptz, through date, kept boolean)
RETURNS TABLE (month date, all_currencies boolean, currency text, customer_months bigint, mrr numeric, paying bigint, new numeric, expansion numeric,
               contraction numeric, churn numeric, reactivation numeric, starting_mrr numeric, retained_mrr numeric, retained_gross_mrr numeric,
               starting_customers bigint, churned_customers bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
  WITH r AS MATERIALIZED (
    SELECT k.month, k.customer_id, k.currency, k.previous_mrr, k.mrr, k.paid_before
      FROM metric_mrr_customer_cache k
     WHERE kept AND k.month <= through AND k.customer_id IN (SELECT u.id FROM unnest(customer_ids) AS u(id))
    UNION ALL
    SELECT k.month, k.customer_id, k.currency, k.previous_mrr, k.mrr, k.paid_before
      FROM metric_mrr_customer_cache k
     WHERE kept AND k.month <= through AND k.customer_id IS NULL AND array_position(customer_ids, NULL) IS NOT NULL
    UNION ALL
    SELECT c.month, c.customer_id, c.currency, c.previous_mrr, c.mrr, c.paid_before
      FROM metric_mrr_customer_months_in(customer_ids, cap, through) c
     WHERE NOT kept
  )
  SELECT r.month, false, r.currency, count(*), sum(r.mrr), count(*) FILTER (WHERE r.mrr > 0),
         COALESCE(sum(r.mrr - r.previous_mrr) FILTER (WHERE metric_mrr_movement(r.previous_mrr, r.mrr, r.paid_before) = 'new'), 0),
         COALESCE(sum(r.mrr - r.previous_mrr) FILTER (WHERE metric_mrr_movement(r.previous_mrr, r.mrr, r.paid_before) = 'expansion'), 0),
         COALESCE(sum(r.mrr - r.previous_mrr) FILTER (WHERE metric_mrr_movement(r.previous_mrr, r.mrr, r.paid_before) = 'contraction'), 0),
         COALESCE(sum(r.mrr - r.previous_mrr) FILTER (WHERE metric_mrr_movement(r.previous_mrr, r.mrr, r.paid_before) = 'churn'), 0),
         COALESCE(sum(r.mrr - r.previous_mrr) FILTER (WHERE metric_mrr_movement(r.previous_mrr, r.mrr, r.paid_before) = 'reactivation'), 0),
         sum(r.previous_mrr),
         COALESCE(sum(r.mrr) FILTER (WHERE r.previous_mrr > 0), 0),
         COALESCE(sum(LEAST(r.mrr, r.previous_mrr)) FILTER (WHERE r.previous_mrr > 0), 0),
         count(*) FILTER (WHERE r.previous_mrr > 0),
         count(*) FILTER (WHERE r.previous_mrr > 0 AND r.mrr = 0)
    FROM r
   GROUP BY r.month, r.currency
  UNION ALL
  SELECT c.month, true, NULL, count(*), 0, count(*) FILTER (WHERE c.pays), 0, 0, 0, 0, 0, 0, 0, 0,
         count(*) FILTER (WHERE c.paid), count(*) FILTER (WHERE c.paid AND NOT c.pays)
    FROM (SELECT r.month, r.customer_id, bool_or(r.mrr > 0) AS pays, bool_or(r.previous_mrr > 0) AS paid FROM r GROUP BY r.month, r.customer_id) c
   GROUP BY c.month;
END;

-- Kept: metric_mrr_month_sums of every customer's kept months, moved by the refresh by what it
-- changes (a row per month, all_currencies and currency; dropped when no customer-month is left).
CREATE TABLE metric_mrr_month_cache AS SELECT * FROM metric_mrr_month_sums('{}', 'infinity', '-infinity', true) WITH NO DATA;
CREATE UNIQUE INDEX metric_mrr_month_cache_key ON metric_mrr_month_cache (month, all_currencies, currency) NULLS NOT DISTINCT;

-- Per UTC month and currency: the MRR at the month's end, ARR (12 x MRR), paying customers (MRR >
-- 0 at the month's end), ARPA (MRR / paying customers), the five movements (contraction and churn
-- negative) and net new MRR (their sum), the starting MRR (the previous month's end), NRR (the
-- starting customers' MRR now / starting MRR: expansion, contraction and churn count, new and
-- reactivation do not) and GRR (the same with each customer capped at its starting MRR: only
-- contraction and churn count), and the logos: starting customers (paying at the previous
-- month's end) and churned customers (of those, paying nothing at this month's end: logo churn
-- is churned / starting). currency NULL: all currencies together in the reporting currency
-- (fx_rates), each customer's amounts at the rate of the month's end, a customer paying in any
-- currency counting once; NULL amounts when a currency of that month has no rate (contracts
-- without a Currency have no row of their own and, having no rate, make the reporting row NULL).
-- The sums are the kept ones, less the kept months of the customers computed at the read
-- (metric_mrr_live_customers), plus theirs as computed: the same as mrr_movements' rows added up.
-- Amounts without trailing zeros (trim_scale), however their sums were grouped.
CREATE VIEW mrr_monthly AS
WITH running AS (
  SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date AS month
), live AS MATERIALIZED (
  SELECT ARRAY(SELECT customer_id FROM metric_mrr_live_customers) AS ids
), parts AS (
  SELECT 1 AS sign, k.* FROM metric_mrr_month_cache k WHERE k.month <= (SELECT month FROM running)
  UNION ALL
  SELECT 1, s.* FROM live CROSS JOIN LATERAL metric_mrr_month_sums(live.ids, now(), (SELECT month FROM running), false) s
  UNION ALL
  SELECT -1, s.* FROM live CROSS JOIN LATERAL metric_mrr_month_sums(live.ids, now(), (SELECT month FROM running), true) s
), sums AS (
  SELECT month, all_currencies, currency,
         trim_scale(sum(sign * mrr)) AS mrr, sum(sign * paying)::bigint AS paying,
         trim_scale(sum(sign * new)) AS new, trim_scale(sum(sign * expansion)) AS expansion, trim_scale(sum(sign * contraction)) AS contraction,
         trim_scale(sum(sign * churn)) AS churn, trim_scale(sum(sign * reactivation)) AS reactivation,
         trim_scale(sum(sign * starting_mrr)) AS starting_mrr, trim_scale(sum(sign * retained_mrr)) AS retained_mrr,
         trim_scale(sum(sign * retained_gross_mrr)) AS retained_gross_mrr,
         sum(sign * starting_customers)::bigint AS starting_customers, sum(sign * churned_customers)::bigint AS churned_customers
    FROM parts
   GROUP BY month, all_currencies, currency
  HAVING sum(sign * customer_months) > 0
), rated AS (
  SELECT s.*, f.rate_to_reporting AS rate
    FROM sums s
    LEFT JOIN metric_fx_month_rates() f ON f.currency = s.currency AND f.month = s.month
   WHERE NOT s.all_currencies
), totals AS (
  SELECT r.month, NULL::text AS currency, bool_and(r.rate IS NOT NULL) AS complete,
         trim_scale(sum(r.mrr * r.rate)) AS mrr, a.paying,
         trim_scale(sum(r.new * r.rate)) AS new, trim_scale(sum(r.expansion * r.rate)) AS expansion, trim_scale(sum(r.contraction * r.rate)) AS contraction,
         trim_scale(sum(r.churn * r.rate)) AS churn, trim_scale(sum(r.reactivation * r.rate)) AS reactivation,
         trim_scale(sum(r.starting_mrr * r.rate)) AS starting_mrr, trim_scale(sum(r.retained_mrr * r.rate)) AS retained_mrr,
         trim_scale(sum(r.retained_gross_mrr * r.rate)) AS retained_gross_mrr,
         a.starting_customers, a.churned_customers
    FROM rated r
    JOIN sums a ON a.month = r.month AND a.all_currencies
   GROUP BY r.month, a.paying, a.starting_customers, a.churned_customers
  UNION ALL
  SELECT month, currency, true, mrr, paying, new, expansion, contraction, churn, reactivation, starting_mrr, retained_mrr, retained_gross_mrr,
         starting_customers, churned_customers
    FROM rated
   WHERE currency IS NOT NULL
)
SELECT month,
       currency,
       CASE WHEN complete THEN mrr END AS mrr,
       CASE WHEN complete THEN 12 * mrr END AS arr,
       paying AS customers,
       CASE WHEN complete THEN mrr / NULLIF(paying, 0) END AS arpa,
       CASE WHEN complete THEN new END AS new,
       CASE WHEN complete THEN expansion END AS expansion,
       CASE WHEN complete THEN contraction END AS contraction,
       CASE WHEN complete THEN churn END AS churn,
       CASE WHEN complete THEN reactivation END AS reactivation,
       CASE WHEN complete THEN trim_scale(new + expansion + contraction + churn + reactivation) END AS net_new_mrr,
       CASE WHEN complete THEN starting_mrr END AS starting_mrr,
       CASE WHEN complete THEN retained_mrr / NULLIF(starting_mrr, 0) END AS nrr,
       CASE WHEN complete THEN retained_gross_mrr / NULLIF(starting_mrr, 0) END AS grr,
       starting_customers,
       churned_customers
  FROM totals;

-- Moves the kept monthly sums by `sign` x metric_mrr_month_sums of the kept months of the customers
-- named, up to `through` (the refresh: -1 before their months are replaced, +1 after).
CREATE FUNCTION metric_mrr_move_sums(customer_ids text[], through date, sign integer) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
  INSERT INTO metric_mrr_month_cache AS c
  SELECT s.month, s.all_currencies, s.currency, sign * s.customer_months, sign * s.mrr, sign * s.paying, sign * s.new, sign * s.expansion,
         sign * s.contraction, sign * s.churn, sign * s.reactivation, sign * s.starting_mrr, sign * s.retained_mrr, sign * s.retained_gross_mrr,
         sign * s.starting_customers, sign * s.churned_customers
    FROM metric_mrr_month_sums(customer_ids, 'infinity', through, true) s
   ORDER BY 1, 2, 3
  ON CONFLICT (month, all_currencies, currency) DO UPDATE
    SET customer_months = c.customer_months + EXCLUDED.customer_months, mrr = c.mrr + EXCLUDED.mrr, paying = c.paying + EXCLUDED.paying,
        new = c.new + EXCLUDED.new, expansion = c.expansion + EXCLUDED.expansion, contraction = c.contraction + EXCLUDED.contraction,
        churn = c.churn + EXCLUDED.churn, reactivation = c.reactivation + EXCLUDED.reactivation, starting_mrr = c.starting_mrr + EXCLUDED.starting_mrr,
        retained_mrr = c.retained_mrr + EXCLUDED.retained_mrr, retained_gross_mrr = c.retained_gross_mrr + EXCLUDED.retained_gross_mrr,
        starting_customers = c.starting_customers + EXCLUDED.starting_customers, churned_customers = c.churned_customers + EXCLUDED.churned_customers;
  DELETE FROM metric_mrr_month_cache WHERE customer_months = 0;
END;

-- The refresh of what is kept at write time (top of this file): computes the listed contracts'
-- and payment transactions' rows again and puts them in place of the kept ones, moves
-- contract_daily's per-day sums and the movements' per-day counts by the difference (and counts
-- the movements again at now() once their settling is a day old), does the same for the MRR months of the
-- customers those contracts and the listed plan variants touch (and their monthly sums), and
-- takes what it saw off the lists (the customers' last known fields too). Once the running month is the last one kept (a month has
-- begun), it computes every customer's MRR months again, a month further. Returns how many
-- contracts (for their own rows or their escalation episodes), transactions, plan variants,
-- customers and dunnings it refreshed. It reads one snapshot for all of that:
-- run it in a REPEATABLE READ transaction (the sink does; search_path set to the warehouse
-- schema). Two refreshes never interleave: the second waits for the first's row of
-- metric_cache_state and then fails with a serialization error (40001), to be run again.
-- What is listed after the snapshot stays listed for the next one.
CREATE FUNCTION metric_refresh() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  seen tid[];
  seen_payments tid[];
  seen_variants tid[];
  seen_customers tid[];
  n bigint;
  episode_contracts text[];
  dunnings bigint;
  running date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  through date;
  customers text[];
BEGIN
  -- The escalation and dunning episodes (metric_refresh_episodes, with their views); what it
  -- refreshes is read first, to be counted (it takes what it saw off its lists).
  episode_contracts := ARRAY(SELECT DISTINCT contract_id FROM metric_episodes_dirty);
  dunnings := (SELECT count(DISTINCT dunning_id) FROM metric_dunnings_dirty);
  PERFORM metric_refresh_episodes();
  seen := ARRAY(SELECT ctid FROM metric_contracts_dirty);
  seen_payments := ARRAY(SELECT ctid FROM metric_payments_dirty);
  seen_variants := ARRAY(SELECT ctid FROM metric_variants_dirty);
  seen_customers := ARRAY(SELECT ctid FROM metric_customers_dirty);
  through := (SELECT mrr_through FROM metric_cache_state);
  IF cardinality(seen) = 0 AND cardinality(seen_payments) = 0 AND cardinality(seen_variants) = 0 AND cardinality(seen_customers) = 0 AND through > running
     AND (SELECT movements_settled_before FROM metric_cache_state) >= now() - interval '1 day' THEN
    n := cardinality(episode_contracts) + dunnings;
    IF n > 0 THEN
      UPDATE metric_cache_state SET contracts = contracts + n;
    END IF;
    RETURN n;
  END IF;
  -- A contract listed for its own rows and for its episodes counts once.
  n := (SELECT count(*) FROM (SELECT contract_id FROM metric_dirty_contracts UNION SELECT unnest(episode_contracts)) c) + dunnings
       + (SELECT count(DISTINCT transaction_id) FROM metric_payments_dirty)
       + (SELECT count(DISTINCT plan_variant_id) FROM metric_variants_dirty) + (SELECT count(DISTINCT customer_id) FROM metric_customers_dirty);
  UPDATE metric_cache_state SET refreshed_at = now(), contracts = contracts + n;
  -- The customers whose MRR months change, read before the spans are replaced: the kept spans
  -- name the customers the listed contracts had.
  IF through > running THEN
    customers := ARRAY(SELECT customer_id FROM metric_mrr_dirty_customers);
  END IF;
  INSERT INTO metric_daily_cache AS c (day, plan_id, state, delta, edges)
  SELECT day, plan_id, state, sum(delta), sum(edges) FROM metric_daily_dirty_deltas GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (day, plan_id, state) DO UPDATE SET delta = c.delta + EXCLUDED.delta, edges = c.edges + EXCLUDED.edges;
  DELETE FROM metric_daily_cache WHERE edges = 0;
  DELETE FROM metric_contract_cache k USING metric_dirty_contracts d WHERE k.contract_id = d.contract_id;
  INSERT INTO metric_contract_cache SELECT * FROM metric_contract_facts_live;
  DELETE FROM metric_unread_customer_cache k USING metric_dirty_contracts d WHERE k.contract_id = d.contract_id;
  INSERT INTO metric_unread_customer_cache (contract_id, customer_id)
  SELECT k.contract_id, k.customer_id
    FROM metric_contract_cache k JOIN metric_dirty_contracts d ON d.contract_id = k.contract_id
   WHERE k.customer_id IS NOT NULL AND NOT EXISTS (SELECT FROM current_facts c WHERE c.resource_type = 'Customer' AND c.resource_id = k.customer_id);
  DELETE FROM metric_segment_cache k USING metric_dirty_contracts d WHERE k.contract_id = d.contract_id;
  INSERT INTO metric_segment_cache SELECT * FROM metric_contract_segments_live;
  PERFORM metric_movement_move_counts(-1);
  DELETE FROM metric_movement_cache k USING metric_dirty_contracts d WHERE k.contract_id = d.contract_id;
  INSERT INTO metric_movement_cache SELECT * FROM metric_contract_movements_live;
  PERFORM metric_movement_move_counts(1);
  IF (SELECT movements_settled_before FROM metric_cache_state) < now() - interval '1 day' THEN
    PERFORM metric_settle_movements(now());
  END IF;
  DELETE FROM metric_mrr_span_cache k USING metric_dirty_contracts d WHERE k.contract_id = d.contract_id;
  INSERT INTO metric_mrr_span_cache SELECT * FROM metric_mrr_spans_live;
  DELETE FROM metric_contracts_dirty WHERE ctid = ANY (seen);
  DELETE FROM metric_payment_cache k WHERE k.transaction_id IN (SELECT transaction_id FROM metric_payments_dirty);
  INSERT INTO metric_payment_cache SELECT * FROM metric_payment_facts_live;
  DELETE FROM metric_payments_dirty WHERE ctid = ANY (seen_payments);
  -- The MRR months, from the spans just kept (what this snapshot listed is off the list now).
  IF through <= running THEN
    through := (running + interval '1 month')::date;
    customers := ARRAY(SELECT customer_id FROM metric_mrr_span_cache UNION SELECT customer_id FROM metric_mrr_customer_cache);
    UPDATE metric_cache_state SET mrr_through = through;
  END IF;
  IF cardinality(customers) > 0 THEN
    PERFORM metric_mrr_move_sums(customers, through, -1);
    DELETE FROM metric_mrr_customer_cache k WHERE k.customer_id IN (SELECT u.id FROM unnest(customers) AS u(id));
    IF array_position(customers, NULL) IS NOT NULL THEN
      DELETE FROM metric_mrr_customer_cache k WHERE k.customer_id IS NULL;
    END IF;
    INSERT INTO metric_mrr_customer_cache SELECT * FROM metric_mrr_customer_months_in(customers, 'infinity', through);
    PERFORM metric_mrr_move_sums(customers, through, 1);
  END IF;
  DELETE FROM metric_variants_dirty WHERE ctid = ANY (seen_variants);
  DELETE FROM metric_customer_cache k WHERE k.customer_id IN (SELECT customer_id FROM metric_customers_dirty);
  INSERT INTO metric_customer_cache SELECT * FROM metric_customer_versions_live;
  DELETE FROM metric_customers_dirty WHERE ctid = ANY (seen_customers);
  RETURN n;
END
$$;

-- The writer role runs the trigger (it appends) and the refresh (the sink).
GRANT SELECT, INSERT, DELETE ON metric_contracts_dirty, metric_payments_dirty, metric_variants_dirty TO billing_loader_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON metric_contract_cache, metric_unread_customer_cache, metric_segment_cache, metric_movement_cache, metric_movement_day_cache, metric_mrr_span_cache, metric_daily_cache, metric_payment_cache,
                                        metric_mrr_customer_cache, metric_mrr_month_cache, metric_cache_state TO billing_loader_writer;

-- The fill: every contract listed, then refreshed, under resource_versions' lock (the trigger's
-- creation above took it), so nothing is appended meanwhile.
INSERT INTO metric_contracts_dirty (contract_id) SELECT resource_id FROM current_facts WHERE resource_type = 'Contract';
INSERT INTO metric_payments_dirty (transaction_id) SELECT resource_id FROM current_facts WHERE resource_type = 'PaymentTransaction';
INSERT INTO metric_customers_dirty (customer_id) SELECT resource_id FROM current_facts WHERE resource_type = 'Customer';
-- The episodes': every contract with an escalation webhook, every dunning (metric_refresh_episodes).
INSERT INTO metric_episodes_dirty (contract_id) SELECT DISTINCT contract_id FROM metric_escalation_event_cache;
INSERT INTO metric_dunnings_dirty (dunning_id) SELECT resource_id FROM current_facts WHERE resource_type = 'Dunning';
SELECT metric_refresh();
-- Statistics at once for the kept rows the overviews and customer_state_on read (autovacuum may
-- come minutes later): without them the planner takes a table just filled for a few rows and
-- reads every span to find one contract's.
ANALYZE metric_customer_cache, metric_contract_cache, metric_segment_cache;
