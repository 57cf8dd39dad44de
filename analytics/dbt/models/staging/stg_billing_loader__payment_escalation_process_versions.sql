-- Every stored version of each payment escalation process, without the raw body, its id named payment_escalation_process_id.
select {{ billing_columns(source('billing', 'payment_escalation_process_history'), except=['body'], rename={'resource_id': 'payment_escalation_process_id'}) }}
  from {{ source('billing', 'payment_escalation_process_history') }}
