-- The analyst's exchange rates into one reporting currency, for the MRR views
-- (warehouse/metric-views.sql, docs/WAREHOUSE.md#mrr-in-money): a rate applies to every day from
-- its valid_from until the next row of the same currency. The reporting currency is whichever
-- the analyst chooses; a row of it with rate 1 makes its own amounts count. Reference data, not
-- history: the analyst role may change it; amounts in a currency without a rate for a day stay
-- NULL in reporting currency rather than being left out.
CREATE TABLE fx_rates (
  -- ISO 4217 code as the contracts carry it (`Currency`), compared in upper case.
  currency          text    NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  valid_from        date    NOT NULL,
  -- Units of the reporting currency per unit of `currency`.
  rate_to_reporting numeric NOT NULL CHECK (rate_to_reporting > 0),
  PRIMARY KEY (currency, valid_from)
);

GRANT SELECT ON fx_rates TO billing_loader_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON fx_rates TO billing_loader_analyst;
