-- Every stored version of each invoice draft, without the raw body, its id named invoice_draft_id.
select {{ billing_columns(source('billing', 'invoice_draft_history'), except=['body'], rename={'resource_id': 'invoice_draft_id'}) }}
  from {{ source('billing', 'invoice_draft_history') }}
