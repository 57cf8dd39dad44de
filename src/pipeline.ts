import type { Config } from './config.js';
import { startEnricher, type EnricherDeps } from './enricher/enricher.js';
import { startIngress, type RunningIngress } from './ingress/ingress.js';
import type { Running } from './lifecycle.js';
import { startSink } from './sink/sink.js';

/** What the pipeline needs: exactly what the enricher needs; ingress and sink use a part of it. */
export type PipelineDeps = EnricherDeps;

export interface RunningPipeline extends Running {
  ingress: RunningIngress;
}

/**
 * Ingress, enricher and sink in one process (`billing-loader run`, the demo, the end-to-end
 * tests), sharing one Kafka client, registry client, metrics registry and health. The ops
 * endpoints are served on the ingress port. Started downstream first (sink, enricher, ingress)
 * and stopped upstream first, so each stage drains into a running next one.
 */
export async function startPipeline(deps: PipelineDeps, config: Config, options: { host?: string; maxPauseMs?: number } = {}): Promise<RunningPipeline> {
  const sink = await startSink({ log: deps.log, metrics: deps.metrics, health: deps.health, kafka: deps.kafka, registry: deps.registry, ...(deps.watch ? { watch: deps.watch } : {}) }, config);
  const enricher = await startEnricher(deps, config, options.maxPauseMs === undefined ? {} : { maxPauseMs: options.maxPauseMs }).catch(async (err: unknown) => {
    await sink.stop();
    throw err;
  });
  const ingress = await startIngress(deps, { ...config, ...(options.host ? { host: options.host } : {}) }).catch(async (err: unknown) => {
    await enricher.stop();
    await sink.stop();
    throw err;
  });
  return {
    ingress,
    async stop() {
      await ingress.stop();
      await enricher.stop();
      await sink.stop();
    },
  };
}
