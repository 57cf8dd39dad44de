-- Per UTC month and currency (null: all currencies in the reporting currency), MRR and its
-- movements (the warehouse's mrr_monthly view).
select month,
       currency,
       mrr,
       arr,
       customers,
       arpa,
       new,
       expansion,
       contraction,
       churn,
       reactivation,
       net_new_mrr,
       starting_mrr,
       nrr,
       grr,
       starting_customers,
       churned_customers
  from {{ source('billing_metrics', 'mrr_monthly') }}
