-- The latest version of each contract that is not deleted (contract_current), without the raw
-- body, its id named contract_id.
select {{ billing_columns(source('billing', 'contract_current'), except=['body'], rename={'resource_id': 'contract_id'}) }}
  from {{ source('billing', 'contract_current') }}
