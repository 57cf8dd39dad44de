-- Every stored version of each customer, without the raw body, its id named customer_id.
select {{ billing_columns(source('billing', 'customer_history'), except=['body'], rename={'resource_id': 'customer_id'}) }}
  from {{ source('billing', 'customer_history') }}
