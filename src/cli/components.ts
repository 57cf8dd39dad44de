import type { Kafka } from 'kafkajs';
import type { Registry as MetricsRegistry } from 'prom-client';
import { createBillingApiClient, type BillingApiClient } from '../billing-api/client.js';
import { billingApiClientOptions } from '../billing-api/client-options.js';
import type { Config } from '../config.js';
import { LoaderError } from '../errors.js';
import { createHealth, type Health } from '../health.js';
import { createKafka, kafkaConnection } from '../kafka/client.js';
import { stopOnSignal } from '../lifecycle.js';
import { createLogger, type Logger, type LogLevel } from '../log.js';
import { createMetrics } from '../metrics.js';
import { startOpsServer } from '../ops-server.js';
import { registerReadinessMetrics } from '../readiness-metrics.js';
import { createRegistry, type Registry } from '../registry/registry.js';
import { startStageWatch, type StageWatch } from '../watch/stall-watchdog.js';
import { createWatchMetrics } from '../watch/watch-metrics.js';
import { stopOptions } from './cli-config.js';

/**
 * What a long-running command is made of, built in one place: the logger, metrics and health
 * every stage reports to, the Kafka client and schema registry it talks through, the billing API
 * client when it reads the API, the ops server, and the order things stop in. `ingress`,
 * `enricher`, `sink`, `run` and `demo` all compose their stages from it, so they log, measure,
 * answer probes and shut down the same way.
 */
export interface Components {
  config: Config;
  log: Logger;
  metrics: MetricsRegistry;
  health: Health;
  kafka: Kafka;
  registry: Registry;
  /** The stall watchdog every stage of the process reports to (LAG_CHECK_INTERVAL_MS, WATCHDOG_*). */
  watch: StageWatch;
  /** The billing API client, created on first use (its settings are checked then: call it before starting anything). */
  billingApi(): BillingApiClient;
  /** Serves GET /healthz, /readyz and /metrics on `port` until the components stop. */
  serveOps(port: number): Promise<void>;
  /** Something to stop when the process stops; stopped in the reverse order of registration. */
  onStop(stop: () => Promise<void>): void;
  /** Stops everything registered, last registered first (also after a failed start). */
  stop(): Promise<void>;
  /** Runs until SIGTERM/SIGINT (or the npx parent exits), then stops everything; resolves to the exit code. */
  runUntilSignal(): Promise<number>;
}

/** `service`: the command (ingress, enricher, sink, run, …), on every log line. */
export function composeComponents(config: Config, options: { service: string; clientId: string; logLevel?: LogLevel }): Components {
  const log = createLogger(options.logLevel ?? config.logLevel, undefined, { service: options.service });
  const metrics = createMetrics();
  const health = createHealth();
  registerReadinessMetrics(metrics, health);
  const watch = startStageWatch({
    log: log.child({ component: 'watchdog' }),
    health,
    metrics: createWatchMetrics(metrics),
    settings: { checkIntervalMs: config.lagCheckIntervalMs, stallMs: config.watchdogStallMs, livenessMs: config.watchdogLivenessMs },
  });
  const stops: (() => Promise<void>)[] = [];
  let api: BillingApiClient | undefined;
  const components: Components = {
    config,
    log,
    metrics,
    health,
    kafka: createKafka({ ...kafkaConnection(config), clientId: options.clientId, log }),
    registry: createRegistry(config),
    watch,
    billingApi() {
      if (!api) {
        // Fails early, naming a missing BILLING_* variable.
        const client = createBillingApiClient({ ...billingApiClientOptions(config), logger: log, registry: metrics });
        api = client;
        stops.push(() => client.close());
      }
      return api;
    },
    async serveOps(port) {
      const ops = await startOpsServer(port, { health, metrics });
      stops.push(() => ops.stop());
    },
    onStop(stop) {
      stops.push(stop);
    },
    async stop() {
      // No restarts of stages that are being stopped.
      watch.stop();
      while (stops.length > 0) await stops.pop()?.();
    },
    runUntilSignal() {
      return stopOnSignal({ stop: () => components.stop() }, log, config.shutdownTimeoutMs, stopOptions());
    },
  };
  return components;
}

/**
 * Starts a command's stages with `start`; if that fails, what was already started (the ops
 * server, the API client) is stopped before the error goes on to the CLI's one-line report.
 */
export async function startOrStop(components: Components, start: () => Promise<void>, deadlineMs = START_DEADLINE_MS): Promise<void> {
  // The ops server answers while the stages are still starting, and each dependency's check may
  // pass long before the last stage has joined its group: without this, /readyz said 200 for an
  // enricher whose router did not exist yet.
  components.health.setCondition(STARTING_CONDITION, 'starting: not every stage has started yet');
  let timer: NodeJS.Timeout | undefined;
  // An enricher's start once never ended after the broker went away in the middle of it (a Kafka
  // client call left pending): a start that never ends becomes a failed start, which the
  // supervisor restarts, instead of a process that is never ready.
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LoaderError(`not started within ${Math.round(deadlineMs / 1000)} s (is Kafka reachable? see the log); exiting, for the supervisor to start it again`)), deadlineMs);
  });
  try {
    await Promise.race([start(), deadline]);
  } catch (err) {
    components.health.setCondition(STARTING_CONDITION, 'start failed');
    await components.stop().catch(() => undefined);
    throw err;
  } finally {
    clearTimeout(timer);
  }
  components.health.setCondition(STARTING_CONDITION, undefined);
}

/**
 * How long a command's stages may take to start. Long enough for a broker that is starting or
 * electing leaders (a few tens of seconds on a loaded machine), short enough that a supervisor
 * restarts a hung start within minutes.
 */
export const START_DEADLINE_MS = 180_000;

/** The readiness condition held from the start of a command until all its stages have started. */
export const STARTING_CONDITION = 'startup';
