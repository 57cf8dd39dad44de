-- One row per contract with a start date: its customer, plan and currency, and its lifecycle on
-- the service's dates (metric_contract_lifecycle: trial, conversion, paying start, cancellation,
-- end, counted by now). The grain of the contract and customer entities of the semantic layer.
select l.contract_id,
       l.customer_id,
       l.plan_id,
       c.currency,
       l.start_date,
       l.trial_start_date,
       l.trial_end_date,
       l.converted_at,
       l.paying_from,
       l.cancelled_at,
       l.ended_at,
       l.end_kind,
       l.trial_outcome
  from {{ ref('stg_billing_loader__contract_lifecycle') }} l
  left join {{ ref('stg_billing_loader__contracts') }} c on c.contract_id = l.contract_id
