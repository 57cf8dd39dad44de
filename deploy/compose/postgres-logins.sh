#!/bin/sh
# Run once by the postgres image on its first start (/docker-entrypoint-initdb.d), as the
# superuser: the loader's logins, each with the least it needs (docs/OPERATIONS.md, PostgreSQL
# logins). The two group roles are created here, so the owner needs no CREATEROLE.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v db="$POSTGRES_DB" \
  -v owner_password="$BILLING_OWNER_PASSWORD" \
  -v sink_password="$BILLING_SINK_PASSWORD" \
  -v dashboard_password="$BILLING_DASHBOARD_PASSWORD" <<'SQL'
CREATE ROLE billing_loader_writer NOLOGIN;
CREATE ROLE billing_loader_analyst NOLOGIN;
-- migrate and replay --rebuild: owns the warehouse schema.
CREATE ROLE billing_owner LOGIN PASSWORD :'owner_password';
GRANT CREATE ON DATABASE :"db" TO billing_owner;
-- the sink: appends, nothing else.
CREATE ROLE billing_sink LOGIN PASSWORD :'sink_password' IN ROLE billing_loader_writer;
-- the dashboard: reads the views.
CREATE ROLE billing_dashboard LOGIN PASSWORD :'dashboard_password' IN ROLE billing_loader_analyst;
SQL
