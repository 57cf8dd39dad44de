import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The ingress's metrics, registered on the process's shared registry (src/metrics.ts). */
export interface IngressMetrics {
  /** Answers by HTTP status (`aborted` when the client left before its body was read). */
  requests: Counter<'status'>;
  /** From a webhook's hand-over to the producer until the broker's ack (or the failure), seconds. */
  produceSeconds: Histogram<'outcome'>;
  /** Records per produce request: how much the linger batches. */
  batchSize: Histogram;
  inFlight: Gauge;
  receivedBytes: Counter;
  /** Value+key bytes of accepted webhooks not yet acknowledged by the broker (read when scraped). */
  pendingBytes: Gauge;
}

const PREFIX = 'billing_loader_ingress_';

export function createIngressMetrics(registry: Registry, pendingBytes: () => number): IngressMetrics {
  const registers = [registry];
  return {
    requests: new Counter({ name: `${PREFIX}requests_total`, help: 'POST /webhooks answers by HTTP status', labelNames: ['status'], registers }),
    produceSeconds: new Histogram({
      name: `${PREFIX}produce_duration_seconds`,
      help: 'time from hand-over to the producer until the broker acknowledged (outcome ok) or the write failed or timed out (outcome error)',
      labelNames: ['outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    batchSize: new Histogram({ name: `${PREFIX}produce_batch_size`, help: 'records per Kafka produce request', buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], registers }),
    inFlight: new Gauge({ name: `${PREFIX}in_flight_requests`, help: 'POST /webhooks requests being handled', registers }),
    receivedBytes: new Counter({ name: `${PREFIX}received_bytes_total`, help: 'webhook body bytes read', registers }),
    pendingBytes: new Gauge({
      name: `${PREFIX}pending_bytes`,
      help: 'bytes of accepted webhooks waiting for the Kafka ack (bounded by INGRESS_MAX_PENDING_BYTES)',
      registers,
      collect() {
        this.set(pendingBytes());
      },
    }),
  };
}
