import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler } from 'express';
import type { BillingApiClientOptions } from '../billing-api/client.js';
import { silentLogger, type Logger } from '../log.js';
import { adminRouter } from './admin-api.js';
import { BillingOperations } from './billing-operations.js';
import { presentBody, type PresentationOptions, type PropertyCase } from './body-presentation.js';
import type { WebhookPayload } from './event-names.js';
import { NO_FAULTS, limitAndFaults, type FaultOptions } from './faults.js';
import type { OperationContext } from './operation-context.js';
import { CatalogOperations } from './catalog-operations.js';
import { PaymentOperations, escalationSettingsBody } from './payment-operations.js';
import { createRateLimiter, type RateLimitOptions, type RateLimiter } from './rate-limiter.js';
import { RequestStats, type RequestCounts } from './request-stats.js';
import { resourceRouter } from './resource-api.js';
import type { ResourceType } from './resource-types.js';
import { runScenario, type ScenarioOptions, type ScenarioResult } from './scenario-runner.js';
import { createRandom } from './seeded-random.js';
import { SimulatedClock } from './simulated-clock.js';
import { TokenIssuer } from './token-issuer.js';
import { tokenRouter } from './token-endpoint.js';
import { TruthStore, type ResourceBody, type TruthHistory } from './truth-store.js';
import { DEFAULT_DELIVERY, WebhookDispatcher, type DeliveryOptions, type DeliveryRecord, type DeliveryStats } from './webhook-dispatcher.js';

export interface SimulatorOptions {
  /** TCP port. Default 0: a free port (read it from `baseUrl`). */
  port?: number;
  /** Interface to bind. Default `127.0.0.1` (the admin endpoints are unauthenticated). */
  host?: string;
  /** Seed of every random choice: identifiers, names, amounts, story timing, faults, delivery quirks. Default 1. */
  seed?: number;
  /** Client id of the client credentials grant (and the registered app of the password grant). Default `sandbox-client`. */
  clientId?: string;
  /** Client secret. Default: random per start. */
  clientSecret?: string;
  /** Users of the password grant. Default one: `demo@example.com` with password `sandbox-password`. */
  users?: Array<{ username: string; password: string }>;
  /** An account with an entity hierarchy: API requests without `X-SELECTED-LEGAL-ENTITY-ID: <this>` get 403. Default none: the header is not needed. */
  legalEntityId?: string;
  /** Lifetime of new tokens, in seconds. Default: never expire (spec 5.4). */
  tokenLifetimeSeconds?: number;
  /** Request budget shared by the token and resource endpoints. Default 50 requests per second, burst 100. `requestsPerSecond: 0` disables it. */
  rateLimit?: RateLimitOptions;
  /** Injected latency and failures. Default none. */
  faults?: Partial<FaultOptions>;
  /** Letter case of property names in resource bodies (spec 9.3). Default `pascal`. */
  propertyCase?: PropertyCase;
  /** Add fields no client knows to resource bodies (spec 9.4). Default false. */
  unknownFields?: boolean;
  /** Letter case of property names in webhook bodies. Default `pascal`. */
  webhookPropertyCase?: PropertyCase;
  /** Where webhooks are POSTed. Default none: events are recorded, not sent. */
  webhookUrl?: string;
  /** Retry schedule and delivery quirks; see DeliveryOptions for defaults. */
  delivery?: Partial<DeliveryOptions>;
  /** Also send the deprecated AccountCreated and the deprecated invoice ids of InvoiceCorrected. Default true. */
  legacyEvents?: boolean;
  /** Simulated time at start. Default 2025-01-01T00:00:00Z. */
  simulatedStart?: Date;
  /** The account's legal entity: `EntityId` of every webhook the operations send. Default: a seeded id. */
  entityId?: string;
  /**
   * Serve the account's payment escalation settings (the object PaymentEscalationProcessId
   * names) at `PaymentEscalationProcesses/{id}`. Default false: no path is documented, the
   * sandbox answers 404 as the real service most likely does.
   */
  escalationSettings?: boolean;
  /** Default: silent. */
  logger?: Logger;
}

/** An event as the simulator emitted it (before any case change for delivery). */
export interface EmittedEvent {
  seq: number;
  payload: WebhookPayload;
  simulatedAt: string;
  wallAt: string;
}

export interface SimulatorStats {
  requests: RequestCounts;
  /** Requests to the token endpoint, answered or refused. */
  tokenRequests: number;
  tokensIssued: number;
  events: number;
  webhooks: DeliveryStats;
}

export interface Simulator {
  /** The service's `{base_url}`: resources under `${baseUrl}/api/v1/`. */
  readonly baseUrl: string;
  /** The service's `{auth_url}`: the token endpoint is `${authUrl}/oauth/token/`. Same server as baseUrl. */
  readonly authUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly users: ReadonlyArray<{ username: string; password: string }>;
  /** The settings a billing API client needs to talk to this sandbox (client credentials grant). */
  clientOptions(): Pick<BillingApiClientOptions, 'apiUrl' | 'authUrl' | 'clientId' | 'grant'>;
  /** Customer, contract and order operations; each changes state, then emits its events. */
  readonly billing: BillingOperations;
  /** Billing, payment, escalation and dunning operations. */
  readonly payments: PaymentOperations;
  /** The product catalog: plans, plan variants, plan group, components, and their price changes. */
  readonly catalog: CatalogOperations;
  /** The account's legal entity id (`EntityId` of the webhooks). */
  readonly entityId: string;
  /** Id of the account's payment escalation settings (PaymentEscalationProcessId of the webhooks). */
  readonly escalationSettingsId: string;
  stats(): SimulatorStats;
  /** Zeroes the request counters (not the token and webhook counters). */
  resetRequestStats(): void;
  /** The true history of an object; undefined if it never existed. */
  history(type: ResourceType, id: string): TruthHistory | undefined;
  /** The current body (canonical PascalCase); undefined if unknown or deleted. */
  current(type: ResourceType, id: string): ResourceBody | undefined;
  /** Every object of the type ever created, in creation order, deleted ones included. */
  ids(type: ResourceType): string[];
  events(): EmittedEvent[];
  /** Events with a `seq` above `seq`, oldest first: cheap to poll, unlike a copy of every event. */
  eventsSince(seq: number): EmittedEvent[];
  deliveries(): DeliveryRecord[];
  /** Sends an arbitrary webhook body (unknown events, forged identifiers); recorded like any event. */
  emit(payload: WebhookPayload): void;
  /** Invalidates every token issued so far; returns how many. */
  revokeTokens(): number;
  /** Lifetime of tokens issued from now on, in seconds; undefined: never expire. */
  setTokenLifetime(seconds: number | undefined): void;
  setFaults(faults: Partial<FaultOptions>): void;
  faults(): FaultOptions;
  setRateLimit(limit: RateLimitOptions): void;
  setPresentation(presentation: Partial<PresentationOptions>): void;
  setWebhookUrl(url: string | undefined): void;
  setDelivery(delivery: Partial<DeliveryOptions>): void;
  /** Plays a scenario over simulated time; one at a time. */
  runScenario(options?: ScenarioOptions): Promise<ScenarioResult>;
  /** Stops a running scenario, abandons pending deliveries, closes the server and its connections. */
  stop(): Promise<void>;
}

/** Starts the sandbox billing service on one HTTP server (token endpoint, REST API, admin endpoints). */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  validate(options);
  const log = options.logger ?? silentLogger;
  const seed = options.seed ?? 1;
  const root = createRandom(seed);
  const clock = new SimulatedClock(options.simulatedStart ?? new Date('2025-01-01T00:00:00Z'));
  const store = new TruthStore(() => clock.now());
  const issuer = new TokenIssuer(options.tokenLifetimeSeconds);
  const stats = new RequestStats();
  let faults: FaultOptions = { ...NO_FAULTS, ...options.faults };
  let limiter: RateLimiter = createRateLimiter(options.rateLimit ?? { requestsPerSecond: 50, burst: 100 });
  let presentation: PresentationOptions = { propertyCase: options.propertyCase ?? 'pascal', unknownFields: options.unknownFields ?? false };
  let delivery: DeliveryOptions = { ...DEFAULT_DELIVERY, ...options.delivery };
  let webhookUrl = options.webhookUrl;
  const webhookCase = options.webhookPropertyCase ?? 'pascal';
  const presentRandom = root.fork('presentation');
  const dispatcher = new WebhookDispatcher(() => delivery, root.fork('delivery'), log.child({ component: 'simulator-webhooks' }));
  const emitted: EmittedEvent[] = [];

  const emit = (payload: WebhookPayload): void => {
    const event: EmittedEvent = { seq: emitted.length + 1, payload: { ...payload }, simulatedAt: clock.now().toISOString(), wallAt: new Date().toISOString() };
    emitted.push(event);
    log.debug('event', { event: payload.Event, seq: event.seq });
    if (!webhookUrl) return;
    const body = webhookCase === 'pascal' ? payload : (presentBody(payload, { propertyCase: webhookCase, unknownFields: false }, presentRandom) as WebhookPayload);
    dispatcher.dispatch(event.seq, body, webhookUrl);
  };
  const account = root.fork('account');
  const entityId = options.entityId ?? account.hexId();
  const escalationSettingsId = account.hexId();
  const ctx: OperationContext = {
    store,
    random: root.fork('scenario'),
    now: () => clock.now(),
    // The service names the legal entity in every webhook it sends.
    emit: (payload) => emit({ ...payload, EntityId: entityId }),
    legacyEvents: options.legacyEvents ?? true,
    escalationSettingsId,
    componentSubscriptions: new Map(),
  };
  const billing = new BillingOperations(ctx);
  const payments = new PaymentOperations(ctx);
  const catalog = new CatalogOperations(ctx);
  catalog.create();
  if (options.escalationSettings) store.create('PaymentEscalationProcess', escalationSettingsId, escalationSettingsBody(escalationSettingsId));
  const clientId = options.clientId ?? 'sandbox-client';
  const clientSecret = options.clientSecret ?? randomBytes(18).toString('base64url');
  const users = options.users ?? [{ username: 'demo@example.com', password: 'sandbox-password' }];
  const scenarioStop = new AbortController();
  let scenarioRunning = false;

  const app = express();
  app.disable('x-powered-by');
  // Conditional requests are not shown in the spec (4.2): no ETags, every GET returns the body.
  app.set('etag', false);
  const server: Server = createServer(app);
  const sim: Simulator = {
    baseUrl: '',
    authUrl: '',
    clientId,
    clientSecret,
    users,
    clientOptions: () => ({ apiUrl: sim.baseUrl, authUrl: sim.authUrl, clientId, grant: { kind: 'client_credentials', clientSecret } }),
    billing,
    payments,
    catalog,
    entityId,
    escalationSettingsId,
    stats: () => ({ requests: stats.snapshot(), tokenRequests: issuer.requests, tokensIssued: issuer.issued, events: emitted.length, webhooks: dispatcher.stats() }),
    resetRequestStats: () => stats.reset(),
    history: (type, id) => store.history(type, id),
    current: (type, id) => store.get(type, id),
    ids: (type) => store.ids(type),
    events: () => structuredClone(emitted),
    eventsSince: (seq) => structuredClone(emitted.slice(Math.max(0, seq))),
    deliveries: () => dispatcher.deliveries(),
    emit,
    revokeTokens: () => issuer.revokeAll(),
    setTokenLifetime: (seconds) => issuer.setLifetime(seconds),
    setFaults: (f) => void (faults = { ...faults, ...f }),
    faults: () => ({ ...faults }),
    setRateLimit: (limit) => void (limiter = createRateLimiter(limit)),
    setPresentation: (p) => void (presentation = { ...presentation, ...p }),
    setWebhookUrl: (url) => void (webhookUrl = url),
    setDelivery: (d) => void (delivery = { ...delivery, ...d }),
    async runScenario(scenario = {}) {
      if (scenarioRunning) throw new Error('a scenario is already running');
      scenarioRunning = true;
      try {
        const signal = scenario.signal ? AbortSignal.any([scenario.signal, scenarioStop.signal]) : scenarioStop.signal;
        const result = await runScenario({ clock, billing, payments, catalog, random: ctx.random, eventCount: () => emitted.length }, { ...scenario, signal });
        log.info('scenario finished', { ...result });
        return result;
      } finally {
        scenarioRunning = false;
      }
    },
    async stop() {
      scenarioStop.abort();
      dispatcher.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Hanging requests (injected timeouts) and idle keep-alive sockets would hold close() open.
        server.closeAllConnections();
      });
    },
  };

  app.use('/_simulator', adminRouter(sim));
  app.use(stats.middleware());
  app.use(limitAndFaults({ limiter: () => limiter, faults: () => faults, random: root.fork('faults'), stats }));
  app.use(tokenRouter(issuer, { clientId, clientSecret, users }));
  app.use('/api/v1', resourceRouter({ store, issuer, presentation: () => presentation, random: presentRandom, ...(options.legalEntityId !== undefined ? { legalEntityId: options.legalEntityId } : {}) }));
  app.use((_req, res) => void res.status(404).json({ Message: 'No such endpoint' }));
  app.use(errorHandler(log));

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host}:${address.port}`;
  Object.assign(sim, { baseUrl: url, authUrl: url });
  log.info('simulator listening', { baseUrl: url, seed });
  return sim;
}

/** Malformed bodies (e.g. a broken form on the token endpoint) are the client's fault: 400, never a stack trace. */
function errorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      if (/^\/oauth\/token\/?$/i.test(req.path)) return void res.status(400).json({ error: 'invalid_request', error_description: 'malformed request body' });
      return void res.status(status).json({ Message: 'Malformed request' });
    }
    log.error('simulator request failed', { err, path: req.path });
    res.status(500).json({ Message: 'Internal error' });
  };
}

function validate(o: SimulatorOptions): void {
  const rate = (name: string, v: number | undefined) => {
    if (v !== undefined && !(v >= 0 && v <= 1)) throw new RangeError(`${name} must be a fraction from 0 to 1, got ${v}`);
  };
  rate('faults.errorRate', o.faults?.errorRate);
  rate('faults.timeoutRate', o.faults?.timeoutRate);
  rate('faults.resetRate', o.faults?.resetRate);
  rate('delivery.lateRate', o.delivery?.lateRate);
  rate('delivery.duplicateRate', o.delivery?.duplicateRate);
  rate('delivery.reorderRate', o.delivery?.reorderRate);
  if (o.delivery?.maxAttempts !== undefined && !(Number.isInteger(o.delivery.maxAttempts) && o.delivery.maxAttempts >= 1)) throw new RangeError('delivery.maxAttempts must be an integer of at least 1');
  if (o.tokenLifetimeSeconds !== undefined && !(o.tokenLifetimeSeconds > 0)) throw new RangeError('tokenLifetimeSeconds must be positive');
}
