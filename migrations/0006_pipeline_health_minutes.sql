-- pipeline_health (warehouse/metric-views.sql) counts per UTC minute of loaded_at and of
-- received_at. Without these it reads every version (bodies included) and every webhook payload
-- on each query, the dashboard's last hour too. Indexed on the minute itself, with the columns the
-- view reads included, the whole view is an index-only scan in minute order and a range of minutes
-- is a range of the index. date_trunc with an explicit zone is immutable (the two-argument form
-- depends on the session's TimeZone, so it cannot be indexed).
CREATE INDEX resource_versions_loaded_minute ON resource_versions (date_trunc('minute', loaded_at, 'UTC')) INCLUDE (loaded_at, source_event_ids);
CREATE INDEX webhook_events_received_minute ON webhook_events (date_trunc('minute', received_at, 'UTC')) INCLUDE (received_at);
