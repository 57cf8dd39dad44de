{#-
  Fails for every row whose `column_name` lies outside [min_value, max_value] (either bound may be
  left out; nulls pass: not_null says whether a value must be there). Written here rather than
  taken from dbt_utils (accepted_range): the package must build without the dbt hub; named after
  the package so that a host project's own range test cannot shadow it.
-#}
{% test billing_loader_in_range(model, column_name, min_value=none, max_value=none) %}
select *
  from {{ model }}
 where {{ column_name }} is not null
   and (false
        {%- if min_value is not none %} or {{ column_name }} < {{ min_value }}{% endif %}
        {%- if max_value is not none %} or {{ column_name }} > {{ max_value }}{% endif %})
{% endtest %}
