-- Monthly recurring revenue, net, per currency, at each month end, where the data gives a price.
-- The warehouse has no price list: the only prices are the invoices. A contract's recurring price
-- is the net total of its latest regular invoice (not a correction) issued before the month end;
-- an invoice covers one 30-day period with the plan and the open components. A contract active at
-- the month end (started, out of trial, not ended) without such an invoice yet (first period
-- not billed) is counted in contracts_active but not priced. A plan change shows from the next
-- invoice. Contract dates are the service's own (when it started paying and its end, from the
-- phases and EndDate of the latest version: metric_contract_lifecycle), so the series follows the
-- billing timeline, not the loader's.
with months as (
    select generate_series(date_trunc('month', min(start_date)), date_trunc('month', now()), interval '1 month') as month
      from {{ source('billing', 'contract_current') }}
),
active as (
    select m.month, c.resource_id as contract_id, c.currency
      from months m
      join {{ source('billing', 'contract_current') }} c
        on c.start_date < m.month + interval '1 month'
       and (c.end_date is null or c.end_date >= m.month + interval '1 month')
      join {{ source('billing_metrics', 'metric_contract_lifecycle') }} l
        on l.contract_id = c.resource_id
       and l.paying_from < m.month + interval '1 month'
),
priced as (
    select a.month, a.contract_id, a.currency, i.total_net
      from active a
      left join lateral (
            select total_net
              from {{ source('billing', 'invoice_current') }} i
             where i.contract_id = a.contract_id
               and i.corrects_invoice_id is null
               and i.document_date < a.month + interval '1 month'
               and i.document_date <= now()
             order by i.document_date desc
             limit 1
      ) i on true
)
select month::date as month,
       currency,
       count(*) as contracts_active,
       count(total_net) as contracts_priced,
       coalesce(sum(total_net), 0) as mrr_net
  from priced
 group by 1, 2
