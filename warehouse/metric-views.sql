-- The metric views (docs/WAREHOUSE.md#metric-views), created by `billing-loader migrate` after the
-- analyst views they read and dropped before those are replaced, in the same transaction, with
-- search_path set to the warehouse schema. Each definition lives in one place: a helper view
-- (metric_*) or one CTE; the public views are listed in src/warehouse/metric-views.ts.
--
-- Clocks: the business metrics use the service's own dates from the bodies (a contract's StartDate,
-- an order's CompletedAt, ...), never valid_from: valid_from is when the loader read the state,
-- which after a late webhook, a backfill or a rebuild can be days after the change. Days are UTC
-- days. pipeline_health is about the loader, so it uses the load-side times.

-- The top-level fields of a body named in `keys` (lower case) as one small object keyed in lower
-- case, matched in any letter case as the typed columns are (spec 9.3). The metric views read the
-- same fields from version_facts (migration 0005), stored once per version when it is appended,
-- because reading them here decompresses every body on every query; this stays for analysts. The
-- current state is read from current_facts (migration 0010), which holds the latest versions only.
DROP FUNCTION IF EXISTS metric_fields(jsonb, text[]);
CREATE FUNCTION metric_fields(body jsonb, keys text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT jsonb_object_agg(lower(e.key), e.value)
          FROM jsonb_each(CASE WHEN jsonb_typeof(body) = 'object' THEN body END) AS e
         WHERE lower(e.key) = ANY (keys));

-- The phases of a contract body (Phases: [{Type, StartDate, PlanId}, ...]), keys in any letter case.
-- The fields are looked up in a level of their own (OFFSET 0), so each wh_as_* gets a plain column
-- and is inlined; given the lookup expression itself, it would run as a function call per value.
DROP FUNCTION IF EXISTS metric_contract_phases(jsonb);
CREATE FUNCTION metric_contract_phases(phases jsonb)
RETURNS TABLE (n bigint, phase_type text, starts_at timestamptz, plan_id text)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT e.n, wh_as_text(k.phase_type), wh_as_timestamptz(k.starts_at), wh_as_text(k.plan_id)
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(phases) = 'array' THEN phases ELSE '[]'::jsonb END) WITH ORDINALITY AS e(value, n)
    CROSS JOIN LATERAL (SELECT wh_field(e.value, 'Type', 'type', 'type') AS phase_type,
                               wh_field(e.value, 'StartDate', 'startDate', 'startdate') AS starts_at,
                               wh_field(e.value, 'PlanId', 'planId', 'planid') AS plan_id
                        OFFSET 0) k;
END;

-- One row per contract with a start date (a contract without one has no lifecycle to count), from
-- its latest version. A trial is a TrialEndDate after the StartDate. converted_at: when the
-- contract became paying: the start of its first phase that is neither Trial nor Inactive; for a
-- body without Phases, the trial's end if the contract outlived it.
CREATE VIEW metric_contract_lifecycle AS
SELECT c.resource_id AS contract_id, d.customer_id, d.plan_id, d.start_date, d.trial_end_date, d.cancellation_date, d.end_date, d.phases, cv.converted_at
  FROM (SELECT * FROM current_facts WHERE resource_type = 'Contract' AND NOT deleted) c
  CROSS JOIN LATERAL (SELECT c.fields) AS x(f)
  -- OFFSET 0, here and below: each field is parsed once per contract. Flattened, every use of a
  -- date validates and casts it again (wh_as_timestamptz), and that was most of what the contract
  -- metrics cost.
  CROSS JOIN LATERAL (
    SELECT t.customer_id, t.plan_id, t.start_date, CASE WHEN t.trial_end_date > t.start_date THEN t.trial_end_date END AS trial_end_date,
           t.cancellation_date, t.end_date, t.phases
      FROM (SELECT wh_as_text(x.f -> 'customerid') AS customer_id,
                   wh_as_text(x.f -> 'planid') AS plan_id,
                   wh_as_timestamptz(x.f -> 'startdate') AS start_date,
                   wh_as_timestamptz(x.f -> 'trialenddate') AS trial_end_date,
                   wh_as_timestamptz(x.f -> 'cancellationdate') AS cancellation_date,
                   wh_as_timestamptz(x.f -> 'enddate') AS end_date,
                   CASE WHEN jsonb_typeof(x.f -> 'phases') = 'array' THEN x.f -> 'phases' END AS phases
            OFFSET 0) t
    OFFSET 0) d
  CROSS JOIN LATERAL (
    SELECT CASE WHEN d.trial_end_date IS NULL THEN NULL
                WHEN d.phases IS NOT NULL THEN
                  (SELECT min(p.starts_at) FROM metric_contract_phases(d.phases) p
                    WHERE lower(p.phase_type) NOT IN ('trial', 'inactive') AND p.starts_at >= d.start_date)
                WHEN d.trial_end_date <= now() AND (d.end_date IS NULL OR d.end_date > d.trial_end_date) THEN d.trial_end_date
           END AS converted_at
    OFFSET 0) cv
 WHERE d.start_date IS NOT NULL;

-- Changes only the version history shows, because the latest body no longer carries them: a
-- cancellation (CancellationDate set where the previous version had none; dated by the
-- CancellationDate) and a reactivation (a CancellationDate withdrawn, or an Ended contract
-- active again). The body has no date for a reactivation: it is dated when the loader read it.
-- "Previous" is the contract's stored version just before (a deleted one included: it has no
-- fields, so nothing is compared across a deletion).
CREATE VIEW metric_contract_transitions AS
SELECT x.contract_id, m.movement, m.at
  FROM (SELECT y.*, lag(y.cancellation_date) OVER w AS previous_cancellation_date, lag(y.status) OVER w AS previous_status
          -- OFFSET 0: the two fields are read before the window's sort, which then sorts narrow
          -- rows; flattened, it sorted every version with all its fields.
          FROM (SELECT h.resource_id AS contract_id, h.version, h.valid_from, h.deleted,
                       wh_as_timestamptz(h.fields -> 'cancellationdate') AS cancellation_date, wh_as_text(h.fields -> 'lifecyclestatus') AS status
                  -- Only the contracts that ever had a version showing a CancellationDate or an
                  -- Ended status: every movement has one at one end (the version itself for a
                  -- cancellation, the one before for a reactivation). The partial index
                  -- version_facts_contract_marks (migration 0007) lists exactly those versions, so
                  -- this reads the histories of the contracts ever cancelled or ended, not every
                  -- contract's. The test is on the raw value (any string): the parsing above decides.
                  FROM (SELECT DISTINCT f.resource_id FROM version_facts f
                         WHERE f.resource_type = 'Contract'
                           AND (jsonb_typeof(f.fields -> 'cancellationdate') = 'string' OR lower(f.fields ->> 'lifecyclestatus') = 'ended')) c
                  JOIN version_facts h ON h.resource_type = 'Contract' AND h.resource_id = c.resource_id
                OFFSET 0) y
        WINDOW w AS (PARTITION BY y.contract_id ORDER BY y.version)) x
  CROSS JOIN LATERAL (
    SELECT 'cancellation' AS movement, x.cancellation_date AS at
     WHERE x.cancellation_date IS NOT NULL AND x.previous_cancellation_date IS NULL
    UNION ALL
    SELECT 'reactivation', x.valid_from
     WHERE NOT x.deleted
       AND ((x.previous_cancellation_date IS NOT NULL AND x.cancellation_date IS NULL)
            OR (lower(x.previous_status) = 'ended' AND lower(x.status) IN ('active', 'intrial')))) m
 -- Either movement's condition, so that only the versions with a movement run the lateral.
 WHERE (x.cancellation_date IS NOT NULL AND x.previous_cancellation_date IS NULL)
    OR (NOT x.deleted
        AND ((x.previous_cancellation_date IS NOT NULL AND x.cancellation_date IS NULL)
             OR (lower(x.previous_status) = 'ended' AND lower(x.status) IN ('active', 'intrial'))));

-- How a payment escalation process ended, with the process's own fields. Over when the process
-- shows a ResetAt or Status Reset; ended_at is the ResetAt (when the service reset it), or else
-- when the loader first read the reset. paid: the contract, as the loader had read it when it read
-- the reset, owed nothing (Balance >= 0: the service resets automatically once the outstanding
-- positions are paid); reset: it still owed (a manual reset). Open: not reset yet.
CREATE VIEW metric_escalation_ends AS
SELECT p.resource_id AS process_id,
       wh_as_text(x.f -> 'contractid') AS contract_id,
       wh_as_text(x.f -> 'customerid') AS customer_id,
       wh_as_timestamptz(x.f -> 'startedat') AS started_at,
       wh_as_integer(x.f -> 'triggerdays') AS trigger_days,
       CASE WHEN jsonb_typeof(x.f -> 'steps') = 'array' THEN x.f -> 'steps' END AS steps,
       COALESCE(wh_as_timestamptz(x.f -> 'resetat'), seen.at) AS ended_at,
       CASE WHEN seen.at IS NULL THEN 'open'
            WHEN (SELECT c.balance FROM contract_history c
                   WHERE c.resource_id = wh_as_text(x.f -> 'contractid') AND c.valid_from <= seen.at
                   ORDER BY c.version DESC LIMIT 1) >= 0 THEN 'paid'
            ELSE 'reset'
       END AS outcome
  FROM (SELECT * FROM current_facts WHERE resource_type = 'PaymentEscalationProcess' AND NOT deleted) p
  CROSS JOIN LATERAL (SELECT p.fields) AS x(f)
  LEFT JOIN LATERAL (SELECT min(h.valid_from) AS at
                       FROM (SELECT * FROM version_facts WHERE resource_type = 'PaymentEscalationProcess') h
                       CROSS JOIN LATERAL (SELECT h.fields) AS y(f)
                      WHERE h.resource_id = p.resource_id AND (wh_as_timestamptz(y.f -> 'resetat') IS NOT NULL OR lower(wh_as_text(y.f -> 'status')) = 'reset')) seen ON true;

-- Per UTC day (the state at the end of the day) and plan: how many contracts were in trial,
-- active, cancelled but still running, and ended (a stock: an ended contract stays counted).
-- One state per contract and day, the first that applies: ended (EndDate reached), cancelled
-- running (CancellationDate reached), in trial (TrialEndDate not reached), active. The plan is that
-- of the contract's latest phase with a plan started by then (an ended contract keeps its last
-- plan), else the contract's PlanId. Days: from the first StartDate to the latest contract date
-- that is not in the future; to today when that date is less than 32 days ago. Computed from
-- each contract's state changes (a running sum), not contract by day.
CREATE VIEW contract_daily AS
-- Each contract is read once (MATERIALIZED: its dates parsed once, not at every state change),
-- with its phases as arrays: their starts, and the starts and plans of those with a plan and a
-- start, ordered by start then phase order, so the plan at a moment is a binary search
-- (width_bucket: how many of those starts are at or before it, the last one being the latest
-- phase started by then) instead of a sort per state change.
WITH contracts AS MATERIALIZED (
  SELECT l.contract_id, l.plan_id, l.start_date, l.trial_end_date, l.cancellation_date, l.end_date, ph.starts, ph.plan_starts, ph.plans
    FROM metric_contract_lifecycle l
    CROSS JOIN LATERAL (SELECT array_agg(p.starts_at ORDER BY p.starts_at, p.n) AS starts,
                               array_agg(p.starts_at ORDER BY p.starts_at, p.n) FILTER (WHERE p.plan_id IS NOT NULL AND p.starts_at IS NOT NULL) AS plan_starts,
                               array_agg(p.plan_id ORDER BY p.starts_at, p.n) FILTER (WHERE p.plan_id IS NOT NULL AND p.starts_at IS NOT NULL) AS plans
                          FROM metric_contract_phases(l.phases) p
                        OFFSET 0) ph
), points AS MATERIALIZED (
  -- The state and plan at each point are computed here, so the window's sort carries a narrow row
  -- (not the contract's arrays). A date two of a contract's dates share gives two points: the
  -- first one's segment is empty (it ends where it starts), and its +1 and -1 cancel on that day.
  SELECT l.contract_id,
         v.at,
         CASE WHEN l.end_date <= v.at THEN 'ended'
              WHEN l.cancellation_date <= v.at THEN 'cancelled_running'
              WHEN l.trial_end_date > v.at THEN 'in_trial'
              ELSE 'active'
         END AS state,
         COALESCE(l.plans[width_bucket(v.at, l.plan_starts)], l.plan_id) AS plan_id
    FROM contracts l
    CROSS JOIN LATERAL unnest(ARRAY[l.start_date, l.trial_end_date, l.cancellation_date, l.end_date] || l.starts) AS v(at)
   WHERE v.at >= l.start_date
), segments AS (
  SELECT p.at, lead(p.at) OVER (PARTITION BY p.contract_id ORDER BY p.at) AS until, p.state, p.plan_id
    FROM points p
), deltas AS (
  SELECT (at AT TIME ZONE 'UTC')::date AS day, plan_id, state, 1 AS delta FROM segments
  UNION ALL
  SELECT (until AT TIME ZONE 'UTC')::date, plan_id, state, -1 FROM segments WHERE until IS NOT NULL
), daily AS (
  SELECT day, plan_id,
         sum(delta) FILTER (WHERE state = 'in_trial') AS in_trial,
         sum(delta) FILTER (WHERE state = 'active') AS active,
         sum(delta) FILTER (WHERE state = 'cancelled_running') AS cancelled_running,
         sum(delta) FILTER (WHERE state = 'ended') AS ended
    FROM deltas GROUP BY day, plan_id
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

-- One row per UTC day and kind of movement with at least one contract. A movement is dated by
-- the service's own date and counted once it has happened (at or before now):
--   new               a contract's StartDate (trial or not)
--   trial_conversion  converted_at of metric_contract_lifecycle
--   upgrade/downgrade an order of OrderType Upgrade / Downgrade that completed (the service
--                     classifies the change; there are no prices to compare), at its CompletedAt
--                     (else CreatedAt)
--   cancellation, reactivation  metric_contract_transitions
--   churn             a contract's EndDate reached
CREATE VIEW subscription_movements AS
WITH lifecycle AS MATERIALIZED (
  SELECT contract_id, start_date, converted_at, end_date FROM metric_contract_lifecycle
), movements AS (
  SELECT 'new' AS movement, contract_id, start_date AS at FROM lifecycle
  UNION ALL
  SELECT 'trial_conversion', contract_id, converted_at FROM lifecycle WHERE converted_at IS NOT NULL
  UNION ALL
  SELECT lower(o.order_type), o.contract_id, COALESCE(o.completed_at, o.created_at)
    FROM (SELECT wh_as_text(x.f -> 'ordertype') AS order_type, wh_as_text(x.f -> 'status') AS status, wh_as_text(x.f -> 'contractid') AS contract_id,
                 wh_as_timestamptz(x.f -> 'createdat') AS created_at, wh_as_timestamptz(x.f -> 'completedat') AS completed_at
            FROM (SELECT * FROM current_facts WHERE resource_type = 'Order' AND NOT deleted) c
            CROSS JOIN LATERAL (SELECT c.fields) AS x(f)) o
   WHERE lower(o.order_type) IN ('upgrade', 'downgrade') AND (o.completed_at IS NOT NULL OR lower(o.status) = 'completed') AND o.contract_id IS NOT NULL
  UNION ALL
  SELECT movement, contract_id, at FROM metric_contract_transitions
  UNION ALL
  SELECT 'churn', contract_id, end_date FROM lifecycle WHERE end_date IS NOT NULL
)
SELECT (at AT TIME ZONE 'UTC')::date AS day,
       movement,
       count(DISTINCT contract_id) AS contracts,
       array_agg(DISTINCT contract_id ORDER BY contract_id) AS contract_ids
  FROM movements
 WHERE at <= now()
 GROUP BY 1, 2;

-- Contracts that started with a trial, by UTC month of their StartDate; converted: those with a
-- converted_at (metric_contract_lifecycle). still_in_trial: not converted and the trial not over.
CREATE VIEW trial_cohorts AS
SELECT date_trunc('month', start_date AT TIME ZONE 'UTC')::date AS cohort_month,
       count(*) AS trials,
       count(converted_at) AS converted,
       round(count(converted_at)::numeric / count(*), 4) AS conversion_rate,
       count(*) FILTER (WHERE converted_at IS NULL AND trial_end_date > now()) AS still_in_trial
  FROM metric_contract_lifecycle
 WHERE trial_end_date IS NOT NULL
 GROUP BY 1;

-- A dunning episode: the dunning documents of one payment escalation process (the dunning's
-- PaymentEscalationProcessId; episode_id is that process's id), or one dunning without a process
-- (episode_id is its own id). It starts at its first DocumentDate (dunning_id is that first
-- document) and ends when its escalation process ends, with that outcome (metric_escalation_ends);
-- a dunning without a process has no end the service tells: it stays open. levels_reached: every
-- DunningLevel any version of its documents showed, ascending.
CREATE VIEW dunning_episodes AS
WITH dunnings AS (
  SELECT d.dunning_id, d.contract_id, d.customer_id, d.process_id, COALESCE(d.process_id, d.dunning_id) AS episode_id, d.document_date
    FROM (SELECT c.resource_id AS dunning_id, wh_as_text(x.f -> 'contractid') AS contract_id, wh_as_text(x.f -> 'customerid') AS customer_id,
                 wh_as_text(x.f -> 'paymentescalationprocessid') AS process_id, wh_as_timestamptz(x.f -> 'documentdate') AS document_date
            FROM (SELECT * FROM current_facts WHERE resource_type = 'Dunning' AND NOT deleted) c
            CROSS JOIN LATERAL (SELECT c.fields) AS x(f)) d
), levels AS MATERIALIZED (
  -- MATERIALIZED: the level is read once per version, and the sort below carries it, not the
  -- version's fields. A JSON number is an integer exactly when it has no decimals and is in
  -- range, which takes no text parsing; other values are cast as the typed columns cast them
  -- (wh_as_integer).
  SELECT h.resource_id AS dunning_id, lv.dunning_level
    FROM (SELECT * FROM version_facts WHERE resource_type = 'Dunning') h
    CROSS JOIN LATERAL (SELECT h.fields) AS x(f)
    CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(x.f -> 'dunninglevel') = 'number' THEN
                                      CASE WHEN scale((x.f -> 'dunninglevel')::numeric) = 0 AND (x.f -> 'dunninglevel')::numeric BETWEEN -2147483648 AND 2147483647
                                           THEN (x.f -> 'dunninglevel')::numeric::integer END
                                    ELSE wh_as_integer(x.f -> 'dunninglevel')
                               END AS dunning_level) lv
   WHERE lv.dunning_level IS NOT NULL
-- Each part of an episode is one aggregation, sorted once for all episodes (DISTINCT ON, or one
-- order for all of its aggregates): with several orders in one GROUP BY, every episode sorted its
-- rows once per order.
), firsts AS (
  SELECT DISTINCT ON (x.episode_id) x.episode_id, x.dunning_id, x.contract_id, x.customer_id
    FROM dunnings x
   ORDER BY x.episode_id, x.document_date, x.dunning_id
), members AS (
  SELECT x.episode_id, min(x.process_id) AS process_id, min(x.document_date) AS started_at, array_agg(x.dunning_id ORDER BY x.dunning_id) AS dunning_ids
    FROM dunnings x
   GROUP BY x.episode_id
), reached AS (
  SELECT x.episode_id, max(l.dunning_level) AS max_level, array_agg(DISTINCT l.dunning_level ORDER BY l.dunning_level) AS levels_reached
    FROM dunnings x
    JOIN levels l ON l.dunning_id = x.dunning_id
   GROUP BY x.episode_id
)
SELECT m.episode_id,
       f.dunning_id,
       f.contract_id,
       f.customer_id,
       m.started_at,
       CASE WHEN z.outcome <> 'open' THEN z.ended_at END AS ended_at,
       r.max_level,
       r.levels_reached,
       COALESCE(z.outcome, 'open') AS outcome,
       CASE WHEN z.outcome <> 'open' THEN z.ended_at - m.started_at END AS duration,
       m.dunning_ids
  FROM members m
  JOIN firsts f ON f.episode_id = m.episode_id
  LEFT JOIN reached r ON r.episode_id = m.episode_id
  -- LATERAL and OFFSET 0: only the processes the dunnings name are read, each by its key (without
  -- OFFSET 0 it is planned as a join with every process's end).
  LEFT JOIN LATERAL (SELECT z.ended_at, z.outcome FROM metric_escalation_ends z WHERE z.process_id = m.process_id OFFSET 0) z ON true;

-- One episode per payment escalation process (the service starts a new process for a later
-- escalation): from its StartedAt to its end (metric_escalation_ends). trigger_days_reached: the
-- TriggerDays of its Steps in the order executed (5, 10, 5 can occur, spec 6.2), or its
-- TriggerDays alone when the body has no Steps.
CREATE VIEW payment_escalation_episodes AS
SELECT z.process_id AS episode_id,
       z.process_id,
       z.contract_id,
       z.customer_id,
       z.started_at,
       CASE WHEN z.outcome <> 'open' THEN z.ended_at END AS ended_at,
       (SELECT max(d) FROM unnest(s.days) AS d) AS max_trigger_days,
       s.days AS trigger_days_reached,
       z.outcome,
       CASE WHEN z.outcome <> 'open' THEN z.ended_at - z.started_at END AS duration
  FROM metric_escalation_ends z
  CROSS JOIN LATERAL (
    SELECT CASE WHEN z.steps IS NOT NULL THEN
                  ARRAY(SELECT wh_as_integer(wh_field(e.value, 'TriggerDays', 'triggerDays', 'triggerdays'))
                          FROM jsonb_array_elements(z.steps) WITH ORDINALITY AS e(value, n)
                         WHERE wh_as_integer(wh_field(e.value, 'TriggerDays', 'triggerDays', 'triggerdays')) IS NOT NULL
                         ORDER BY e.n)
                ELSE array_remove(ARRAY[z.trigger_days], NULL)
           END AS days) s;

-- Payment transactions by their current state, per UTC day of CompletedAt (else CreatedAt),
-- provider and currency: Succeeded and Failed ones (other statuses, e.g. pending, are not counted).
CREATE VIEW payment_outcomes AS
SELECT (COALESCE(t.completed_at, t.created_at) AT TIME ZONE 'UTC')::date AS day,
       t.provider,
       t.currency,
       count(*) FILTER (WHERE t.status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE t.status = 'failed') AS failed,
       COALESCE(sum(t.amount) FILTER (WHERE t.status = 'succeeded'), 0) AS succeeded_amount,
       COALESCE(sum(t.amount) FILTER (WHERE t.status = 'failed'), 0) AS failed_amount
  FROM (SELECT lower(wh_as_text(x.f -> 'status')) AS status, wh_as_numeric(x.f -> 'amount') AS amount, wh_as_text(x.f -> 'currency') AS currency,
               wh_as_text(x.f -> 'paymentprovider') AS provider, wh_as_timestamptz(x.f -> 'createdat') AS created_at, wh_as_timestamptz(x.f -> 'completedat') AS completed_at
          FROM (SELECT * FROM current_facts WHERE resource_type = 'PaymentTransaction' AND NOT deleted) c
          CROSS JOIN LATERAL (SELECT c.fields) AS x(f)) t
 WHERE t.status IN ('succeeded', 'failed')
 GROUP BY 1, 2, 3;

-- The loader's own health per minute, on the load-side clocks: webhooks by ingress receipt,
-- versions by loaded_at, and freshness: for each version caused by webhooks, the seconds from the
-- earliest of them received to the version loaded (percentiles over the minute's versions).
-- dead_letters: the records of the DLQ topics given up in that minute (by any stage; the sink
-- copies each into dead_letters, migration 0017).
CREATE VIEW pipeline_health AS
-- Minutes in UTC with an explicit zone: migration 0006 indexes exactly these expressions, so a
-- filter on minute (the dashboard's last hours) reads only those minutes' index entries, and the
-- whole view reads the indexes in minute order instead of every version and webhook. A UTC
-- minute is the minute in any zone whose offset is whole minutes.
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
        -- Both percentiles from one aggregate, so each version's sources are looked up once; a
        -- version without source events (backfill, reconciliation) looks nothing up.
        SELECT date_trunc('minute', r.loaded_at, 'UTC'),
               0,
               count(*),
               percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (
                 ORDER BY CASE WHEN cardinality(r.source_event_ids) > 0 THEN
                            extract(epoch FROM r.loaded_at - (SELECT min(w.received_at) FROM unnest(r.source_event_ids) AS e(id) JOIN webhook_events w ON w.event_id = e.id))::float8
                          END),
               0
          FROM resource_versions r
         GROUP BY 1) m
 GROUP BY m.minute;
