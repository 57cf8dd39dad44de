-- Per month end and paying contract: its recurring price where the data gives one. The warehouse
-- has no price list: the only prices are the invoices. A contract's price is the net total of its
-- latest regular invoice (not a correction) issued before the month end and by now; an invoice
-- covers one 30-day period with the plan and the open components. Paying at the month end:
-- started, paying_from come (out of trial, or no trial), not ended. total_net is null while the
-- contract's first period is not billed yet. A plan change shows from the next invoice.
with months as (
    select generate_series(date_trunc('month', min(start_date)), date_trunc('month', now()), interval '1 month') as month
      from {{ ref('stg_billing_loader__contracts') }}
),
paying as (
    select m.month, c.contract_id, c.currency
      from months m
      join {{ ref('stg_billing_loader__contracts') }} c
        on c.start_date < m.month + interval '1 month'
       and (c.end_date is null or c.end_date >= m.month + interval '1 month')
      join {{ ref('stg_billing_loader__contract_lifecycle') }} l
        on l.contract_id = c.contract_id
       and l.paying_from < m.month + interval '1 month'
)
select p.month,
       p.contract_id,
       p.currency,
       i.invoice_id,
       i.total_net
  from paying p
  left join lateral (
        select i.invoice_id, i.total_net
          from {{ ref('stg_billing_loader__invoices') }} i
         where i.contract_id = p.contract_id
           and i.corrects_invoice_id is null
           and i.document_date < p.month + interval '1 month'
           and i.document_date <= now()
         order by i.document_date desc, i.invoice_id
         limit 1
  ) i on true
