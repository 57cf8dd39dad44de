-- The subscription movements of each month side by side (one column per kind), from the
-- warehouse's subscription_movements view. New paying business is new + trial_conversion.
select date_trunc('month', day)::date as month,
{%- for kind in ['new', 'trial_start', 'trial_conversion', 'trial_not_converted', 'plan_change', 'cancellation', 'reactivation', 'churn'] %}
       coalesce(sum(contracts) filter (where movement = '{{ kind }}'), 0) as {{ kind }}{{ ',' if not loop.last }}
{%- endfor %}
  from {{ ref('stg_billing_loader__subscription_movements') }}
 group by 1
