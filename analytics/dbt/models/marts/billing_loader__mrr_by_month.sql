-- MRR priced from the plan variants (monthly fee x quantity of each paying phase), per UTC month
-- and currency, at each month's end: the warehouse's mrr_monthly, row for row. currency null is
-- the reporting-currency row (fx_rates); its amounts are null for a month with a currency
-- without a rate. billing_loader__mrr_monthly is the invoice-priced estimate.
select month,
       currency,
       mrr,
       arr,
       customers,
       arpa,
       new as new_mrr,
       expansion as expansion_mrr,
       contraction as contraction_mrr,
       churn as churned_mrr,
       reactivation as reactivation_mrr,
       net_new_mrr,
       starting_mrr,
       nrr,
       grr,
       starting_customers,
       churned_customers
  from {{ ref('stg_billing_loader__mrr_monthly') }}
