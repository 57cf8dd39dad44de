import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { deadLetterCounter } from '../kafka/dead-letter-metrics.js';
import type { DeadLetter } from '../wire/dead-letter.js';

/** The sink's metrics, prefixed `billing_loader_sink_`, registered on the process registry. */
export interface SinkMetrics {
  rowsWritten: Counter<'table'>;
  alreadyStored: Counter;
  batchSize: Histogram<'topic'>;
  commitLatency: Histogram;
  deadLetters: Counter<'topic' | 'error_class'>;
  /** Counts letters sent, in billing_loader_dead_letters_total{stage="sink"} (deadLetters is counted per letter by the caller). */
  allDeadLetters: (letters: readonly DeadLetter[]) => void;
  versionGaps: Counter<'resource_type'>;
  lateFills: Counter<'resource_type'>;
  databaseRetries: Counter<'reason'>;
  /** Contracts and payment transactions whose kept metric rows were computed again (metric-refresher.ts). */
  metricResourcesRefreshed: Counter;
  /** Contract and payment transaction versions listed for the next refresh, as of the last one. */
  metricResourcesPending: Gauge;
  metricRefreshSeconds: Histogram;
}

/** Registers the metrics once per registry (the `run` command shares one registry among stages). */
export function createSinkMetrics(registry: Registry): SinkMetrics {
  const existing = registry.getSingleMetric('billing_loader_sink_rows_written_total');
  if (existing) return cache.get(registry) as SinkMetrics;
  const registers = [registry];
  const allDeadLetters = deadLetterCounter(registry);
  const metrics: SinkMetrics = {
    rowsWritten: new Counter({ name: 'billing_loader_sink_rows_written_total', help: 'Rows appended to the warehouse, by table', labelNames: ['table'], registers }),
    alreadyStored: new Counter({ name: 'billing_loader_sink_already_stored_total', help: 'Snapshot records skipped because the same version with the same content was already stored (replays)', registers }),
    batchSize: new Histogram({ name: 'billing_loader_sink_batch_size', help: 'Records per batch written in one transaction', labelNames: ['topic'], buckets: [1, 10, 50, 100, 500, 1000, 2500, 5000, 10000, 25000], registers }),
    commitLatency: new Histogram({ name: 'billing_loader_sink_commit_latency_seconds', help: 'Duration of one batch transaction, BEGIN to COMMIT, in seconds', buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers }),
    deadLetters: new Counter({ name: 'billing_loader_sink_dead_letters_total', help: 'Records sent to a DLQ, by DLQ topic and error class', labelNames: ['topic', 'error_class'], registers }),
    allDeadLetters: (letters) => allDeadLetters('sink', letters),
    versionGaps: new Counter({ name: 'billing_loader_sink_version_gaps_total', help: 'Snapshots written whose version was not the stored maximum + 1 (an upstream bug)', labelNames: ['resource_type'], registers }),
    lateFills: new Counter({ name: 'billing_loader_sink_late_versions_total', help: 'Snapshots written below the stored maximum version, filling an earlier gap', labelNames: ['resource_type'], registers }),
    databaseRetries: new Counter({ name: 'billing_loader_sink_database_retries_total', help: 'Batches retried after a database or broker failure, by reason', labelNames: ['reason'], registers }),
    metricResourcesRefreshed: new Counter({ name: 'billing_loader_sink_metric_resources_refreshed_total', help: "Contracts, payment transactions, plan variants, customers and dunnings whose metric rows kept at write time were computed again", registers }),
    metricResourcesPending: new Gauge({ name: 'billing_loader_sink_metric_resources_pending', help: 'Entries of the lists of contracts, payment transactions, customers, plan variants, escalation episodes and dunnings appended since the last refresh of the kept metric rows (the metric views compute these at each read until then)', registers }),
    metricRefreshSeconds: new Histogram({ name: 'billing_loader_sink_metric_refresh_seconds', help: 'Duration of one refresh of the kept metric rows, in seconds', buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers }),
  };
  cache.set(registry, metrics);
  return metrics;
}

const cache = new WeakMap<Registry, SinkMetrics>();
