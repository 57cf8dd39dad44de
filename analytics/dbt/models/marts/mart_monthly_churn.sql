-- Churn rate per month: contracts that churned in the month (subscription_movements) over the
-- contracts paying on the month's first day with data (contract_daily: active + cancelled but
-- still running). Both inputs are the warehouse's metric views: the definition of "churn" lives
-- there, this model only divides.
with days as (
    select day, sum(active + cancelled_running) as paying, sum(in_trial) as in_trial
      from {{ source('billing_metrics', 'contract_daily') }}
     group by day
),
month_start as (
    select distinct on (date_trunc('month', day))
           date_trunc('month', day)::date as month,
           paying as paying_at_start,
           in_trial as in_trial_at_start
      from days
     order by date_trunc('month', day), day
),
churned as (
    select date_trunc('month', day)::date as month, sum(contracts) as churned
      from {{ source('billing_metrics', 'subscription_movements') }}
     where movement = 'churn'
     group by 1
)
select m.month,
       m.paying_at_start,
       m.in_trial_at_start,
       coalesce(c.churned, 0) as churned,
       round(coalesce(c.churned, 0)::numeric / nullif(m.paying_at_start, 0), 4) as churn_rate
  from month_start m
  left join churned c using (month)
