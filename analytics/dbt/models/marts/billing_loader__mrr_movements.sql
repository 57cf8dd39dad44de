-- Each customer's MRR movement per UTC month and currency (new, reactivation, expansion,
-- contraction, churn, unchanged), priced from the plan variants: the warehouse's mrr_movements.
select month,
       customer_id,
       currency,
       movement,
       previous_mrr,
       mrr,
       amount,
       previous_mrr_reporting,
       mrr_reporting,
       amount_reporting
  from {{ ref('stg_billing_loader__mrr_movements') }}
