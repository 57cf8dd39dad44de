{#-
  Fails for every combination of `columns` that occurs more than once (NULLs compare equal, as in
  GROUP BY). Written here rather than taken from dbt_utils: the package must build without the
  dbt hub.
-#}
{% test unique_combination(model, columns) %}
select {{ columns | join(', ') }}, count(*) as occurrences
  from {{ model }}
 group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}
