import { Counter, Gauge, type Registry } from 'prom-client';

/** The stage watch's metrics (src/watch/), registered once per process registry. */
export interface WatchMetrics {
  /** Seconds since the stage last committed progress while it had work waiting; 0 when it has none. */
  stalled: Gauge<'stage'>;
  /** Records between a consumer group's committed offset and the partition's end, per partition this process owns. */
  lag: Gauge<'stage' | 'group' | 'topic' | 'partition'>;
  /** Restarts of a stage's consumers and producers by the watchdog. */
  restarts: Counter<'stage'>;
}

const cache = new WeakMap<Registry, WatchMetrics>();

export function createWatchMetrics(registry: Registry): WatchMetrics {
  const known = cache.get(registry);
  if (known) return known;
  const registers = [registry];
  const metrics: WatchMetrics = {
    stalled: new Gauge({ name: 'billing_loader_stage_stalled_seconds', help: 'Seconds since the stage last committed progress while it had work waiting (0: no work waiting, or progress at the last check)', labelNames: ['stage'], registers }),
    lag: new Gauge({ name: 'billing_loader_consumer_group_lag', help: "Records between the group's committed offset and the partition's last stable offset, per partition this process owns (checked every LAG_CHECK_INTERVAL_MS; removed when the partition is revoked)", labelNames: ['stage', 'group', 'topic', 'partition'], registers }),
    restarts: new Counter({ name: 'billing_loader_stage_restarts_total', help: "Restarts of a stage's consumers and producers by the stall watchdog", labelNames: ['stage'], registers }),
  };
  cache.set(registry, metrics);
  return metrics;
}
