-- Every stored version of each order, without the raw body, its id named order_id.
select {{ billing_columns(source('billing', 'order_history'), except=['body'], rename={'resource_id': 'order_id'}) }}
  from {{ source('billing', 'order_history') }}
