import type pg from 'pg';
import type { Logger } from '../log.js';
import { refreshMetrics, SERIALIZATION_FAILURE } from '../warehouse/metric-refresh.js';
import type { SinkMetrics } from './sink-metrics.js';

export interface MetricRefresherOptions {
  pool: pg.Pool;
  schema: string;
  /** Pause between two refreshes, in milliseconds (SINK_METRICS_REFRESH_MS). */
  intervalMs: number;
  metrics: Pick<SinkMetrics, 'metricResourcesRefreshed' | 'metricResourcesPending' | 'metricRefreshSeconds'>;
  log: Logger;
}

export interface MetricRefresher {
  /** Waits for the refresh in flight, if any, and runs no other. */
  stop(): Promise<void>;
}

/**
 * Refreshes the metric rows kept at write time every `intervalMs`, beside the sink's writes
 * (its own connection and transaction; src/warehouse/metric-refresh.ts). Sinks running side by
 * side each refresh: one at a time gets through, the others give way (40001) until their next
 * turn. A failed refresh is logged and tried again at the next turn: the views stay right
 * without it, only slower. A schema without the function (metric views of an earlier release)
 * stops the refresher with one warning.
 */
export function startMetricRefresher(options: MetricRefresherOptions): MetricRefresher {
  const { pool, schema, intervalMs, metrics, log } = options;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let stopped = false;

  const turn = async (): Promise<void> => {
    const end = metrics.metricRefreshSeconds.startTimer();
    try {
      const result = await refreshMetrics(pool, schema);
      if (result === undefined) {
        log.warn('metric views keep no answers at write time: refresher off', { schema });
        stopped = true;
        return;
      }
      end();
      metrics.metricResourcesRefreshed.inc(result.refreshed);
      metrics.metricResourcesPending.set(result.pending);
      if (result.refreshed > 0) log.debug('metric rows refreshed', { refreshed: result.refreshed, pending: result.pending });
    } catch (err) {
      if ((err as { code?: string }).code === SERIALIZATION_FAILURE) log.debug('metric refresh gave way to another one', { schema });
      else log.warn('metric refresh failed: tried again at the next turn', { err, schema });
    }
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      inFlight = turn().finally(() => {
        inFlight = undefined;
        schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
    },
  };
}
