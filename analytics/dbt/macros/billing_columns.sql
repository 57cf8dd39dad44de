{#-
  The columns of `relation` except `except`, with `rename` applied ({old: new}). Read from the
  database when the model runs, so the typed columns a warehouse's mapping adds
  (warehouse/typed-columns.json) reach the staging models without editing them.
-#}
{% macro billing_columns(relation, except=[], rename={}) %}
  {%- if not execute -%}
    *
  {%- else -%}
    {%- set out = [] -%}
    {%- for c in adapter.get_columns_in_relation(relation) if c.name not in except -%}
      {%- if c.name in rename -%}
        {%- do out.append(adapter.quote(c.name) ~ ' as ' ~ adapter.quote(rename[c.name])) -%}
      {%- else -%}
        {%- do out.append(adapter.quote(c.name)) -%}
      {%- endif -%}
    {%- endfor -%}
    {{ out | join(',\n       ') }}
  {%- endif -%}
{% endmacro %}
