-- A churn rate outside [0, 1] means the definition counts something that was not paying (a trial
-- that never paid counted as churn gave 2.0 once): the build fails.
select month, churn_rate
  from {{ ref('mart_monthly_churn') }}
 where churn_rate < 0 or churn_rate > 1
