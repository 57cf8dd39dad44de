-- Trials by the UTC month they started (the warehouse's trial_cohorts view).
select cohort_month,
       trials,
       converted,
       conversion_rate,
       still_in_trial,
       not_converted
  from {{ source('billing_metrics', 'trial_cohorts') }}
