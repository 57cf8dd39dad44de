import { createServer, type RequestListener, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import type { Admin, Kafka } from 'kafkajs';
import type { Registry as MetricsRegistry } from 'prom-client';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import type { Health } from '../health.js';
import { ensureTopics } from '../kafka/topics.js';
import { pipelineTopicSpecs, topicNames } from '../wire/topics.js';
import type { Running } from '../lifecycle.js';
import type { Logger } from '../log.js';
import { mountMetrics, mountPublicProbes, startOpsServer, type RunningOpsServer } from '../ops-server.js';
import type { Registry } from '../registry/registry.js';
import { createBatchProducer, type BatchProducer } from './batch-producer.js';
import type { StageWatch } from '../watch/stall-watchdog.js';
import { createIngressMetrics } from './ingress-metrics.js';
import { WEBHOOK_SCHEMA_FILE, valueSubject } from '../wire/schemas.js';
import { webhookPathToken } from './webhook-path.js';
import { webhookHandler, type WebhookHandler } from './webhook-route.js';

export interface IngressDeps {
  log: Logger;
  kafka: Kafka;
  registry: Registry;
  health: Health;
  /** The process's shared Prometheus registry (src/metrics.ts). */
  metrics: MetricsRegistry;
  /** The process's stall watchdog. */
  watch?: StageWatch;
}

/** The configuration the ingress reads, plus tuning knobs that have sound defaults. */
export type IngressConfig = Pick<
  Config,
  | 'topicPrefix'
  | 'topicPartitions'
  | 'ingressPort'
  | 'ingressTokens'
  | 'ingressMaxBodyBytes'
  | 'ingressMaxPendingBytes'
  | 'ingressMaxConnections'
  | 'ingressHeadersTimeoutMs'
  | 'ingressRequestTimeoutMs'
  | 'ingressKeepAliveTimeoutMs'
  | 'ingressShutdownDelayMs'
  | 'opsPort'
> & {
  /** Interface to listen on. Default 0.0.0.0. */
  host?: string;
  /** Longest wait for the broker's ack before answering 503, in ms. Default 5000. */
  produceTimeoutMs?: number;
  /** Linger before a batch goes out when no produce request is in flight, in ms. Default 0. */
  lingerMs?: number;
  /** Largest produce request, in records. Default 500. */
  maxBatchMessages?: number;
};

export interface RunningIngress extends Running {
  /** The port actually bound (differs from the configured one when that is 0). */
  port: number;
  /** Base URL of the HTTP server, e.g. http://127.0.0.1:8080 */
  url: string;
  /** Base URL of the ops server (healthz, readyz with reasons, metrics), when OPS_PORT is set. */
  opsUrl?: string;
}

/**
 * The ingress under the stall watchdog: its work waiting is the bytes of accepted webhooks not yet
 * acknowledged by the broker, its progress each acknowledgement.
 */
function watchIngress(watch: StageWatch | undefined, producer: BatchProducer): () => void {
  if (!watch) return () => undefined;
  let seen = producer.acknowledged();
  return watch.watch({
    stage: 'ingress',
    sample() {
      const acknowledged = producer.acknowledged();
      const progressed = acknowledged > seen;
      seen = acknowledged;
      const pendingBytes = producer.pendingBytes();
      return Promise.resolve({ lag: pendingBytes, progressed, waitingFor: { kafkaAckOfBytes: pendingBytes } });
    },
    restart: () => Promise.resolve(producer.restart()),
  });
}

/** Batches stay below the broker's default message.max.bytes (1 MiB) with room for framing. */
const MAX_BATCH_BYTES = 900_000;

/**
 * Starts the ingress: creates the webhooks topic if missing, registers the record schema,
 * connects the producer, then serves POST /webhooks and the ops routes. `stop` answers 503 to
 * /readyz at once but keeps taking webhooks for `ingressShutdownDelayMs` (a load balancer takes
 * a while to stop sending), then answers 503 to new webhooks, waits for the webhooks being
 * handled, and closes everything.
 */
export async function startIngress(deps: IngressDeps, config: IngressConfig): Promise<RunningIngress> {
  const log = deps.log.child({ component: 'ingress' });
  const topic = topicNames(config.topicPrefix).webhooks;
  const produceTimeoutMs = config.produceTimeoutMs ?? 5000;

  const admin = deps.kafka.admin();
  await admin.connect();
  const producer = createBatchProducer({
    kafka: deps.kafka,
    topic,
    log,
    timeoutMs: produceTimeoutMs,
    lingerMs: config.lingerMs ?? 0,
    maxBatchMessages: config.maxBatchMessages ?? 500,
    maxBatchBytes: MAX_BATCH_BYTES,
    maxPendingBytes: config.ingressMaxPendingBytes,
    onBatch: (records) => metrics.batchSize.observe(records),
  });
  const metrics = createIngressMetrics(deps.metrics, () => producer.pendingBytes());
  let ops: RunningOpsServer | undefined;
  try {
    await ensureTopics(admin, [pipelineTopicSpecs(topicNames(config.topicPrefix), config.topicPartitions).webhooks]);
    const schemaId = await deps.registry.registerFile(valueSubject(topic), WEBHOOK_SCHEMA_FILE);
    await producer.connect();
    addReadinessChecks(deps, admin, topic);

    let stopping = false;
    const isStopping = () => stopping;
    const inFlight = new Set<Promise<void>>();
    const handler = webhookHandler({
      log,
      producer,
      metrics,
      encode: (record) => deps.registry.encode(schemaId, record),
      maxBodyBytes: config.ingressMaxBodyBytes,
      maxPendingBytes: config.ingressMaxPendingBytes,
      tokens: config.ingressTokens,
      isStopping,
    });
    const tracked = trackInFlight(handler, inFlight);
    const tokenConfigured = config.ingressTokens !== undefined;
    const app = buildApp(deps, log, tokenConfigured ? '/webhooks/:token' : '/webhooks', tracked, config.opsPort === undefined);
    if (config.opsPort !== undefined) ops = await startOps(deps, config.opsPort, config.host ?? '0.0.0.0');
    const server = await listen(dispatch(app, tracked, tokenConfigured, isStopping), config.ingressPort, config.host ?? '0.0.0.0', config);
    const port = (server.address() as AddressInfo).port;
    const unwatch = watchIngress(deps.watch, producer);
    log.info('ingress listening', { port, opsPort: ops?.port, topic, schemaId, tokenInPath: tokenConfigured });

    const stop = async () => {
      unwatch();
      deps.health.setCondition('ingress', 'shutting down');
      if (config.ingressShutdownDelayMs > 0) {
        // Kubernetes removes a stopping pod from its Service's endpoints at the same time as it
        // sends SIGTERM, not before: a load balancer may send webhooks for a few seconds more,
        // which would all get 503 if the ingress refused them at once.
        log.info('ingress shutdown delay: /readyz answers 503, webhooks still accepted', { delayMs: config.ingressShutdownDelayMs });
        await sleep(config.ingressShutdownDelayMs);
      }
      stopping = true;
      log.info('ingress stopping: new webhooks get 503, finishing the ones in flight', { inFlight: inFlight.size });
      await Promise.allSettled([...inFlight]);
      // Every caller has its answer; what may still be in flight was answered 503 (timeout).
      await producer.drain(produceTimeoutMs);
      await closeServer(server);
      await ops?.stop();
      await producer.disconnect();
      await admin.disconnect();
    };
    let stopped: Promise<void> | undefined;
    // Idempotent: a second call (a second signal, a test's cleanup) waits for the first.
    return { port, url: `http://127.0.0.1:${port}`, ...(ops ? { opsUrl: `http://127.0.0.1:${ops.port}` } : {}), stop: () => (stopped ??= stop()) };
  } catch (err) {
    await ops?.stop();
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect();
    throw err;
  }
}

/**
 * The webhooks skip Express: on this path Express costs ~100 µs of CPU per request, more than
 * everything else the ingress does (docs/ARCHITECTURE.md, "The ingress's HTTP path"), mostly
 * because it swaps the prototypes of node's request and response objects. Express still serves
 * the ops routes, the 404s and the rarer spellings of the webhook path.
 */
function dispatch(app: Express, handler: WebhookHandler, tokenConfigured: boolean, isStopping: () => boolean): RequestListener {
  return (req, res) => {
    // While stopping, no connection is kept alive, so server.close() can finish.
    if (isStopping()) res.setHeader('Connection', 'close');
    const webhook = webhookPathToken(req.method, req.url, tokenConfigured);
    if (webhook === null) app(req, res);
    else void handler(req, res, webhook.token);
  };
}

/**
 * The public port: the webhooks, /healthz and a bare /readyz; /metrics too when there is no
 * ops port (OPS_PORT), as a small deployment expects.
 */
function buildApp(deps: IngressDeps, log: Logger, webhookPath: string, handler: WebhookHandler, withMetrics: boolean): Express {
  const app = express();
  app.disable('x-powered-by');
  // An ETag is a hash of every answer: CPU spent on nothing (no answer here is ever cached).
  app.set('etag', false);
  mountPublicProbes(app, deps, log);
  if (withMetrics) mountMetrics(app, deps.metrics);
  app.post(webhookPath, (req, res) => handler(req, res, (req.params as { token?: string }).token));
  // Every other path: the same 404 as a wrong token, so probing reveals nothing.
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  return app;
}

/** Keeps each running request's promise in `inFlight` until it settles, for the shutdown drain. */
function trackInFlight(handler: WebhookHandler, inFlight: Set<Promise<void>>): WebhookHandler {
  return (req, res, token) => {
    const done = handler(req, res, token);
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
    return done;
  };
}

/**
 * Readiness: the broker answers metadata for the topic. The registry is reported too, but does
 * not make the ingress not ready: it encodes with the schema id it registered at start, so a
 * registry outage does not stop it taking webhooks, and readiness tied to it would take every
 * ingress out of the load balancer at once.
 */
function addReadinessChecks(deps: IngressDeps, admin: Admin, topic: string): void {
  deps.health.addCheck('ingress.kafka', async () => {
    await admin.fetchTopicMetadata({ topics: [topic] });
  });
  deps.health.addCheck('ingress.schema-registry', () => deps.registry.ping(), { informational: true });
}

type ServerLimits = Pick<IngressConfig, 'ingressMaxConnections' | 'ingressHeadersTimeoutMs' | 'ingressRequestTimeoutMs' | 'ingressKeepAliveTimeoutMs'>;

async function startOps(deps: IngressDeps, port: number, host: string): Promise<RunningOpsServer> {
  try {
    return await startOpsServer(port, deps, host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') throw new ConfigError('OPS_PORT', `cannot listen on ${host}:${port} (${code}); choose another port`);
    throw err;
  }
}

function listen(listener: RequestListener, port: number, host: string, limits: ServerLimits): Promise<Server> {
  return new Promise((resolve, reject) => {
    // A client that trickles its headers or body cannot hold a connection (and a webhook) for
    // longer than these limits, and slow clients together cannot take every connection.
    const server = createServer(
      {
        headersTimeout: limits.ingressHeadersTimeoutMs,
        requestTimeout: limits.ingressRequestTimeoutMs,
        keepAliveTimeout: limits.ingressKeepAliveTimeoutMs,
        // Node checks the two time limits only this often (30 s by default), which would let a
        // slow client overstay a short headers limit many times over.
        connectionsCheckingInterval: Math.min(1000, limits.ingressHeadersTimeoutMs),
      },
      listener,
    );
    server.maxConnections = limits.ingressMaxConnections;
    server.once('error', (err: NodeJS.ErrnoException) => {
      // The operator's to fix: say which variable, in one line.
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') reject(new ConfigError('INGRESS_PORT', `cannot listen on ${host}:${port} (${err.code}); choose another port`));
      else reject(err);
    });
    server.listen(port, host, () => resolve(server));
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Idle keep-alive connections would hold close() open until they time out.
    server.closeIdleConnections();
  });
}
