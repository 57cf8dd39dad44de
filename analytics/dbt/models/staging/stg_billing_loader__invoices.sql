-- The latest version of each invoice that is not deleted (invoice_current), without the raw body,
-- its id named invoice_id.
select {{ billing_columns(source('billing', 'invoice_current'), except=['body'], rename={'resource_id': 'invoice_id'}) }}
  from {{ source('billing', 'invoice_current') }}
