-- One row per UTC day from 2000 to two years ahead: the time spine MetricFlow joins metric_time
-- to (docs.getdbt.com/docs/build/metricflow-time-spine). Off with the var
-- billing_loader_time_spine where the host project has a day spine of its own.
{{ config(materialized='table', enabled=var('billing_loader_time_spine')) }}
select d::date as date_day
  from generate_series(date '2000-01-01', (current_date + interval '2 years')::date, interval '1 day') as d
