-- Every stored version of each contract, without the raw body, its id named contract_id.
select {{ billing_columns(source('billing', 'contract_history'), except=['body'], rename={'resource_id': 'contract_id'}) }}
  from {{ source('billing', 'contract_history') }}
