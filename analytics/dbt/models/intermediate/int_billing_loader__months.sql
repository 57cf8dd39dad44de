-- The month spine of the contract metrics: every month from the first one in which a contract
-- started paying or a trial started, to the current one (business now).
select generate_series(date_trunc('month', min(least(paying_from, trial_start_date))), date_trunc('month', now()), interval '1 month') as month
  from {{ ref('stg_billing_loader__contract_lifecycle') }}
