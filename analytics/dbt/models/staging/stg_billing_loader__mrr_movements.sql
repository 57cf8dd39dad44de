-- One row per customer, currency and UTC month with MRR at the month's end or the previous
-- month's end, and its movement (the warehouse's mrr_movements view).
select month,
       customer_id,
       currency,
       previous_mrr,
       mrr,
       movement,
       amount,
       rate_to_reporting,
       previous_mrr_reporting,
       mrr_reporting,
       amount_reporting
  from {{ source('billing_metrics', 'mrr_movements') }}
