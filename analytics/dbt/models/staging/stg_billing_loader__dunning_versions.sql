-- Every stored version of each dunning, without the raw body, its id named dunning_id.
select {{ billing_columns(source('billing', 'dunning_history'), except=['body'], rename={'resource_id': 'dunning_id'}) }}
  from {{ source('billing', 'dunning_history') }}
