-- One row per accepted webhook delivery (docs/CONTRACT.md section 5). Written by the sink from
-- billing.webhooks; event_id is assigned at ingress, so a replayed record is a no-op.
CREATE TABLE webhook_events (
  event_id     uuid        PRIMARY KEY,
  event        text        NOT NULL,
  received_at  timestamptz NOT NULL,
  payload      jsonb       NOT NULL
);

CREATE INDEX webhook_events_received_at ON webhook_events (received_at);
CREATE INDEX webhook_events_event ON webhook_events (event, received_at);
