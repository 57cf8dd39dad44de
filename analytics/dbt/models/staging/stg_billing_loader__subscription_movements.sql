-- Per UTC day and kind of movement, how many contracts moved, and which (the warehouse's
-- subscription_movements view).
select day,
       movement,
       contracts,
       contract_ids
  from {{ source('billing_metrics', 'subscription_movements') }}
