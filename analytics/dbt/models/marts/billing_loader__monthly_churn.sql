-- Churn rate per month (per contract): of the contracts paying at the month's start, those that
-- churned in it. A trial that never paid is never churn ("trial not converted"); a contract that
-- started paying and churned within the month is in neither count, so the rate is at most 1, and
-- a range test fails the build when it is not. The definitions live in the warehouse's views
-- (metric_contract_lifecycle, subscription_movements); this model only counts and divides.
select m.month::date as month,
       p.paying_at_start,
       p.in_trial_at_start,
       coalesce(c.churned, 0) as churned,
       round(coalesce(c.churned, 0)::numeric / nullif(p.paying_at_start, 0), 4) as churn_rate
  from {{ ref('int_billing_loader__months') }} m
  join {{ ref('int_billing_loader__paying_at_month_start') }} p on p.month = m.month
  left join {{ ref('int_billing_loader__churned_by_month') }} c on c.month = m.month
