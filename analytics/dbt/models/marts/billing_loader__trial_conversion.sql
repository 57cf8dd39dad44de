-- Trial conversion per cohort month (the warehouse's trial_cohorts view) with a trailing
-- three-cohort rate, which moves less than one small cohort's. The latest cohorts can still be in
-- trial: their rate rises as they convert.
select cohort_month,
       trials,
       converted,
       not_converted,
       still_in_trial,
       conversion_rate,
       round(sum(converted) over w / nullif(sum(trials) over w, 0), 4) as conversion_rate_3_cohorts
  from {{ ref('stg_billing_loader__trial_cohorts') }}
window w as (order by cohort_month rows between 2 preceding and current row)
