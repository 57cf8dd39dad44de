-- Per month: the contracts paying at its start (paying_from before it, not ended by then) and those
-- in trial then (started, not converted, the trial not over). Stocks at an instant, by the
-- service's dates (metric_contract_lifecycle).
select m.month,
       count(l.contract_id) filter (where l.paying_from < m.month and (l.ended_at is null or l.ended_at >= m.month)) as paying_at_start,
       count(l.contract_id) filter (where l.trial_start_date < m.month and (l.converted_at is null or l.converted_at >= m.month)
                                      and (l.trial_end_date is null or l.trial_end_date >= m.month)) as in_trial_at_start
  from {{ ref('int_billing_loader__months') }} m
  cross join {{ ref('stg_billing_loader__contract_lifecycle') }} l
 group by m.month
