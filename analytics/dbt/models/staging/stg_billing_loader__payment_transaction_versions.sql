-- Every stored version of each payment transaction, without the raw body, its id named payment_transaction_id.
select {{ billing_columns(source('billing', 'payment_transaction_history'), except=['body'], rename={'resource_id': 'payment_transaction_id'}) }}
  from {{ source('billing', 'payment_transaction_history') }}
