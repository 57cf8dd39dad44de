-- Monthly recurring revenue, net, per currency, at each month end, where the data gives a price
-- (int_billing_loader__contract_prices_monthly: the latest regular invoice of each paying
-- contract). Contracts paying but not invoiced yet are counted, not priced.
select month::date as month,
       currency,
       count(*) as contracts_active,
       count(total_net) as contracts_priced,
       coalesce(sum(total_net), 0) as mrr_net
  from {{ ref('int_billing_loader__contract_prices_monthly') }}
 group by 1, 2
