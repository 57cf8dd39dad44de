-- Churn rate per month (per contract): of the contracts paying at the month's start (paying_from
-- before it, not ended by then), those that churned in the month (end_kind churn: a contract that
-- had paid ended; a trial that never paid is "trial not converted", never churn). A contract that
-- started paying and churned within the month is left out of both, as ChartMogul and ProfitWell
-- do, so the rate is at most 1. The definitions live in the warehouse's metric_contract_lifecycle;
-- this model only counts and divides.
with lifecycle as (
    select * from {{ source('billing_metrics', 'metric_contract_lifecycle') }}
),
months as (
    select generate_series(date_trunc('month', min(least(paying_from, trial_start_date))), date_trunc('month', now()), interval '1 month') as month
      from lifecycle
),
counted as (
    select m.month,
           count(*) filter (where l.paying_from < m.month and (l.ended_at is null or l.ended_at >= m.month)) as paying_at_start,
           count(*) filter (where l.trial_start_date < m.month and (l.converted_at is null or l.converted_at >= m.month)
                              and (l.trial_end_date is null or l.trial_end_date >= m.month)) as in_trial_at_start,
           count(*) filter (where l.paying_from < m.month and l.end_kind = 'churn'
                              and l.ended_at >= m.month and l.ended_at < m.month + interval '1 month') as churned
      from months m
      cross join lifecycle l
     group by m.month
)
select month::date as month,
       paying_at_start,
       in_trial_at_start,
       churned,
       round(churned::numeric / nullif(paying_at_start, 0), 4) as churn_rate
  from counted
