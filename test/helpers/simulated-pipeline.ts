import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import { createBillingApiClient, type BillingApiClient } from '../../src/billing-api/client.js';
import type { Config } from '../../src/config.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import { createKafka, kafkaConnection } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { startPipeline, type RunningPipeline } from '../../src/pipeline.js';
import { createRegistry, type Registry } from '../../src/registry/registry.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/simulator.js';
import { testConfig } from './environment.js';

export interface SimulatedPipeline {
  config: Config;
  pool: pg.Pool;
  kafka: Kafka;
  registry: Registry;
  sim: Simulator;
  api: BillingApiClient;
  pipeline: RunningPipeline;
  stop(): Promise<void>;
}

/**
 * The whole pipeline in this process (as `billing-loader run`) on a private topic prefix and
 * migrated schema, its billing API client pointed at a sandbox whose webhooks go to its ingress.
 * `frontApi` may put a server between the client and the sandbox (it gets the sandbox's URL and
 * returns the URL to use instead, and is closed by stop()).
 */
export async function startSimulatedPipeline(options: {
  name: string;
  sim: SimulatorOptions;
  maxConcurrency?: number;
  frontApi?: (sandboxUrl: string) => Promise<{ url: string; close(): Promise<void> }>;
  /** Settings over the test services' (e.g. another broker and its credentials, shorter reread windows). */
  env?: Record<string, string>;
  /** Settings over the test configuration (e.g. `opsPort: 0`). */
  config?: Partial<Config>;
}): Promise<SimulatedPipeline> {
  // Rereads of 404s on the scale of a test scenario's seconds, not the production minutes.
  const config = testConfig({ ENRICHER_NOT_FOUND_WINDOW_MS: '3000', ENRICHER_GONE_CONFIRM_MS: '1000', ...options.env });
  const log = createLogger(config.logLevel);
  const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: options.name, log, max: 3 });
  await migrate(pool, { schema: config.databaseSchema, log });
  // The escalation settings served, so a loader that reads what PaymentEscalated names finds it.
  const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, escalationSettings: true, ...options.sim });
  const front = await options.frontApi?.(sim.baseUrl);
  const api = createBillingApiClient({
    ...sim.clientOptions(),
    ...(front ? { apiUrl: front.url, authUrl: front.url } : {}),
    requestsPerSecond: 500,
    maxConcurrency: options.maxConcurrency ?? 16,
    logger: log,
  });
  const kafka = createKafka({ ...kafkaConnection(config), clientId: options.name, log });
  const registry = createRegistry(config);
  const pipeline = await startPipeline({ kafka, registry, reader: api, log, metrics: createMetrics(), health: createHealth() }, { ...config, ingressPort: 0, ...options.config }, { host: '127.0.0.1', maxPauseMs: 1000 });
  sim.setWebhookUrl(`${pipeline.ingress.url}/webhooks`);
  return {
    config,
    pool,
    kafka,
    registry,
    sim,
    api,
    pipeline,
    async stop() {
      await sim.stop();
      await pipeline.stop();
      await api.close();
      await front?.close();
      await pool.end();
    },
  };
}
