-- Per month with churn: the contracts the warehouse's subscription_movements count as churn in it
-- (a contract that had paid reached its EndDate), less those that started paying in the same
-- month (joined and churned within one period: in neither count of the churn rate, as ChartMogul
-- and ProfitWell count it). The churn itself is the view's; the lifecycle only tells when each
-- contract started paying. A churn the lifecycle does not show as paying before the month stays
-- counted: if the view ever counted something that never paid, the churn rate would rise above 1
-- and its range test would fail the build.
with churn as (
    select date_trunc('month', s.day)::timestamptz as month, c.contract_id
      from {{ ref('stg_billing_loader__subscription_movements') }} s
     cross join lateral unnest(s.contract_ids) as c(contract_id)
     where s.movement = 'churn'
)
select churn.month,
       count(distinct churn.contract_id) as churned
  from churn
  left join {{ ref('stg_billing_loader__contract_lifecycle') }} l
    on l.contract_id = churn.contract_id
 where not coalesce(l.paying_from >= churn.month, false)
 group by churn.month
