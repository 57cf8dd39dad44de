-- One row per contract and UTC day with a paying span in force at the end of the day: its MRR
-- from the plan variant's monthly fee x quantity (the warehouse's mrr_daily view).
select day,
       contract_id,
       customer_id,
       currency,
       plan_id,
       plan_variant_id,
       quantity,
       mrr,
       rate_to_reporting,
       mrr_reporting
  from {{ source('billing_metrics', 'mrr_daily') }}
