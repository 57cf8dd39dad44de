-- Every stored version of each invoice, without the raw body, its id named invoice_id.
select {{ billing_columns(source('billing', 'invoice_history'), except=['body'], rename={'resource_id': 'invoice_id'}) }}
  from {{ source('billing', 'invoice_history') }}
