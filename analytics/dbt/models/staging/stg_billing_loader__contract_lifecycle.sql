-- One row per contract with a start date: its trial, conversion, paying start, cancellation and
-- end on the service's dates, counted by now (the warehouse's metric_contract_lifecycle, where
-- these definitions live). The raw phases stay in the warehouse.
select contract_id,
       customer_id,
       plan_id,
       start_date,
       end_date,
       trial_start_date,
       trial_end_date,
       converted_at,
       paying_from,
       cancelled_at,
       ended_at,
       end_kind,
       trial_outcome
  from {{ source('billing_metrics', 'metric_contract_lifecycle') }}
