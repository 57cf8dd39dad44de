-- The dead letters, one row per record of the DLQ topics (<prefix>.webhooks.dlq,
-- <prefix>.snapshots.dlq), as the sink reads them back (src/sink/dead-letter-recorder.ts): every
-- stage's letters, in either format, so that pipeline_health counts what the DLQs hold. Keyed by
-- the record's place in its DLQ: reading a DLQ again (a restart, a replay) adds nothing.
CREATE TABLE dead_letters (
  dlq_topic        text        NOT NULL,
  dlq_partition    integer     NOT NULL,
  dlq_offset       bigint      NOT NULL,
  -- enricher or sink; 'unknown' (and empty fields) for a record of neither dead-letter format.
  stage            text        NOT NULL,
  error_class      text        NOT NULL,
  error_message    text        NOT NULL,
  source_topic     text        NOT NULL,
  source_partition integer     NOT NULL,
  source_offset    bigint      NOT NULL,
  failed_at        timestamptz NOT NULL,
  loaded_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dlq_topic, dlq_partition, dlq_offset)
);

-- pipeline_health counts them per UTC minute of failed_at (as 0006 does for the other counts).
CREATE INDEX dead_letters_failed_minute ON dead_letters (date_trunc('minute', failed_at, 'UTC'));

GRANT SELECT, INSERT ON dead_letters TO billing_loader_writer;
GRANT SELECT ON dead_letters TO billing_loader_analyst;
