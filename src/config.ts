import { accessSync, constants as fsConstants, readFileSync, statSync } from 'node:fs';
import { RESOURCE_TYPE_INFO } from './billing-api/resource-types.js';
import { ConfigError } from './errors.js';
import { DEFAULT_MIGRATE_LOCK_ATTEMPTS, DEFAULT_MIGRATE_LOCK_TIMEOUT_MS } from './db/migrate-transaction.js';
import { DEFAULT_HEAP_GROWTH_PERCENT } from './heap-growth.js';
import { LOG_LEVELS, type LogLevel } from './log.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from './package-root.js';
import { PIPELINE_PARTITIONS } from './wire/topics.js';
import { MAX_SCHEMA_FOR_ROLES, ROLE_MODES, type RoleMode } from './warehouse/schema-roles.js';

/**
 * The loader's configuration: every option declared once, with its variable, description and
 * default. `--help`, the README table and validation all come from this declaration. Only this
 * module reads the environment, and it takes the environment as a parameter.
 */

export type Env = Readonly<Record<string, string | undefined>>;

/** Where Kafka, the registry and PostgreSQL are when their variables are unset. */
export interface ConnectionDefaults {
  KAFKA_BROKERS: string;
  SCHEMA_REGISTRY_URL: string;
  DATABASE_URL: string;
}

interface DefaultContext {
  /**
   * Given by the caller: the local stack's for `stack`, `demo` and `simulate` (src/cli/cli-config.ts);
   * none for the settings a production command reads, nor for a library user.
   */
  connections?: Partial<ConnectionDefaults>;
}

/** A connection setting's default, or a one-line error naming it when the caller has none. */
function connection(c: DefaultContext, variable: keyof ConnectionDefaults): string {
  const value = c.connections?.[variable];
  if (value === undefined) throw new ConfigError(variable, 'not set; this command needs it (only stack, demo and simulate default it to the local stack)');
  return value;
}

interface OptionSpec<T> {
  env: string;
  description: string;
  /** How the default reads in docs; `undefined` means "none". */
  defaultText?: string;
  default?: (ctx: DefaultContext) => T;
  parse: (raw: string) => T;
  secret?: boolean;
}

/** An option that always has a value (its default when unset). */
function defaulted<T>(spec: OptionSpec<T> & { default: (ctx: DefaultContext) => T }): OptionSpec<T> & { hasDefault: true } {
  return { ...spec, hasDefault: true };
}

/** An option that is `undefined` when unset. */
function optional<T>(spec: Omit<OptionSpec<T>, 'default' | 'defaultText'>): OptionSpec<T> & { hasDefault: false } {
  return { ...spec, hasDefault: false };
}

class Invalid extends Error {}

const str = (raw: string): string => raw;

function url(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Invalid(`expected a URL such as http://host:port, got '${raw}'`);
  }
  if (!['http:', 'https:'].includes(parsed.protocol)) throw new Invalid(`expected an http(s) URL, got '${raw}'`);
  return raw.replace(/\/+$/, '');
}

function postgresUrl(raw: string): string {
  if (!/^postgres(ql)?:\/\//.test(raw)) throw new Invalid('expected postgres://user[:password]@host:port/database');
  try {
    new URL(raw);
  } catch {
    throw new Invalid('expected postgres://user[:password]@host:port/database');
  }
  return raw;
}

function brokers(raw: string): string[] {
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) throw new Invalid('expected comma-separated host:port, got nothing');
  for (const b of list) {
    if (!/^[^\s:]+:\d{1,5}$/.test(b)) throw new Invalid(`expected comma-separated host:port, got '${b}'`);
  }
  return list;
}

function port(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > 65535) throw new Invalid(`expected a port number 1-65535, got '${raw}'`);
  return n;
}

function positiveInt(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || !Number.isSafeInteger(n)) throw new Invalid(`expected a positive integer, got '${raw}'`);
  return n;
}

function nonNegativeInt(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new Invalid(`expected a non-negative integer, got '${raw}'`);
  return n;
}

function identifier(raw: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(raw)) throw new Invalid(`expected a lower-case SQL identifier ([a-z_][a-z0-9_]*), got '${raw}'`);
  return raw;
}

function roleMode(raw: string): RoleMode {
  if (!(ROLE_MODES as readonly string[]).includes(raw)) throw new Invalid(`expected ${ROLE_MODES.join(' or ')}, got '${raw}'`);
  return raw as RoleMode;
}

function topicPrefix(raw: string): string {
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(raw)) throw new Invalid(`expected letters, digits, '.', '_' or '-', got '${raw}'`);
  return raw;
}

function urlSegment(raw: string): string {
  if (!/^[A-Za-z0-9._~-]{16,256}$/.test(raw)) throw new Invalid('expected 16-256 URL-safe characters (A-Z a-z 0-9 . _ ~ -)');
  return raw;
}

/** One or more URL segments, comma-separated: the tokens of a rotation's overlap. */
function urlSegments(raw: string): string[] {
  return raw.split(',').map((s) => urlSegment(s.trim()));
}

/** A path under {base_url}/api/v1/: segments of URL-safe characters, no '.' or '..' segment. */
function apiPath(raw: string): string {
  const segments = raw.replace(/^\/+|\/+$/g, '').split('/');
  if (!segments.every((s) => /^[A-Za-z0-9._~-]+$/.test(s) && s !== '.' && s !== '..')) throw new Invalid(`expected a path such as Contracts (URL-safe segments, no '.' or '..'), got '${raw}'`);
  return segments.join('/');
}

/** An HTTP header value: visible ASCII, no separators that could start another header. */
function headerValue(raw: string): string {
  if (!/^[\x21-\x7e]{1,256}$/.test(raw)) throw new Invalid(`expected 1-256 visible ASCII characters, got '${raw}'`);
  return raw;
}

function bool(raw: string): boolean {
  const v = raw.toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new Invalid(`expected true or false, got '${raw}'`);
}

export const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

function saslMechanism(raw: string): SaslMechanism {
  const v = raw.toLowerCase();
  if (!(SASL_MECHANISMS as readonly string[]).includes(v)) throw new Invalid(`expected one of ${SASL_MECHANISMS.join(', ')}, got '${raw}'`);
  return v as SaslMechanism;
}

/** A path the process can read now: a typo fails at start, not at the first TLS handshake. */
function readableFile(raw: string): string {
  try {
    if (!statSync(raw).isFile()) throw new Error('not a file');
    accessSync(raw, fsConstants.R_OK);
  } catch {
    throw new Invalid(`no readable file at '${raw}'`);
  }
  return raw;
}

function logLevel(raw: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) throw new Invalid(`expected one of ${LOG_LEVELS.join(', ')}, got '${raw}'`);
  return raw as LogLevel;
}

/**
 * SHUTDOWN_TIMEOUT_MS's default: inside the 30 s Kubernetes waits before SIGKILL by default
 * (terminationGracePeriodSeconds), with room for the time the kubelet takes to send SIGTERM.
 */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 20_000;

export const options = {
  kafkaBrokers: defaulted({ env: 'KAFKA_BROKERS', description: 'Kafka bootstrap servers, comma-separated host:port', defaultText: "required (demo: the local stack's)", default: (c) => brokers(connection(c, 'KAFKA_BROKERS')), parse: brokers }),
  schemaRegistryUrl: defaulted({ env: 'SCHEMA_REGISTRY_URL', description: 'base URL of a Confluent-compatible schema registry API', defaultText: "required (demo: the local stack's)", default: (c) => connection(c, 'SCHEMA_REGISTRY_URL'), parse: url }),
  kafkaSsl: defaulted({ env: 'KAFKA_SSL', description: 'connect to Kafka over TLS: true or false', defaultText: 'false', default: () => false, parse: bool }),
  kafkaSslCaFile: optional({ env: 'KAFKA_SSL_CA_FILE', description: "PEM file of the CA(s) that signed the brokers' certificates (unset: the system's trusted CAs)", parse: readableFile }),
  kafkaSslCertFile: optional({ env: 'KAFKA_SSL_CERT_FILE', description: 'PEM client certificate, for brokers that require mutual TLS (with KAFKA_SSL_KEY_FILE)', parse: readableFile }),
  kafkaSslKeyFile: optional({ env: 'KAFKA_SSL_KEY_FILE', description: 'PEM private key of KAFKA_SSL_CERT_FILE (unencrypted)', parse: readableFile }),
  kafkaSaslMechanism: optional({ env: 'KAFKA_SASL_MECHANISM', description: 'SASL mechanism: plain, scram-sha-256 or scram-sha-512 (unset: no SASL)', parse: saslMechanism }),
  kafkaSaslUsername: optional({ env: 'KAFKA_SASL_USERNAME', description: 'SASL user name (with KAFKA_SASL_MECHANISM)', parse: str }),
  kafkaSaslPassword: optional({ env: 'KAFKA_SASL_PASSWORD', description: 'SASL password (with KAFKA_SASL_MECHANISM)', parse: str, secret: true }),
  schemaRegistryUsername: optional({ env: 'SCHEMA_REGISTRY_USERNAME', description: 'schema registry HTTP basic auth user (with SCHEMA_REGISTRY_PASSWORD)', parse: str }),
  schemaRegistryPassword: optional({ env: 'SCHEMA_REGISTRY_PASSWORD', description: 'schema registry HTTP basic auth password', parse: str, secret: true }),
  schemaRegistryCaFile: optional({ env: 'SCHEMA_REGISTRY_CA_FILE', description: "PEM file of the CA(s) that signed an https SCHEMA_REGISTRY_URL's certificate (unset: the system's trusted CAs)", parse: readableFile }),
  databaseUrl: defaulted({ env: 'DATABASE_URL', description: 'PostgreSQL connection string', defaultText: "required (demo: the local stack's)", default: (c) => connection(c, 'DATABASE_URL'), parse: postgresUrl, secret: true }),
  migrateDatabaseUrl: optional({ env: 'MIGRATE_DATABASE_URL', description: 'PostgreSQL connection string of the login owning the warehouse, for migrate and the DDL of replay --rebuild (unset: DATABASE_URL)', parse: postgresUrl, secret: true }),
  databaseSchema: defaulted({ env: 'DATABASE_SCHEMA', description: 'PostgreSQL schema holding the warehouse', defaultText: 'billing', default: () => 'billing', parse: identifier }),
  migrateLockTimeoutMs: defaulted({ env: 'MIGRATE_LOCK_TIMEOUT_MS', description: "longest wait of one migrate statement for a lock on a view or table, in milliseconds (lock_timeout): then its transaction is rolled back and tried again, so a long query on a view holds up the view's new readers for at most about this long", defaultText: String(DEFAULT_MIGRATE_LOCK_TIMEOUT_MS), default: () => DEFAULT_MIGRATE_LOCK_TIMEOUT_MS, parse: positiveInt }),
  migrateLockAttempts: defaulted({ env: 'MIGRATE_LOCK_ATTEMPTS', description: 'attempts of a migrate transaction whose lock wait timed out (MIGRATE_LOCK_TIMEOUT_MS), with a backoff of 1 s doubling up to 30 s between them, before migrate gives up (exit 1; run it again later)', defaultText: String(DEFAULT_MIGRATE_LOCK_ATTEMPTS), default: () => DEFAULT_MIGRATE_LOCK_ATTEMPTS, parse: positiveInt }),
  typedColumnsFile: optional({ env: 'TYPED_COLUMNS_FILE', description: 'a JSON file of typed columns of your own, kept outside the package, in the form of warehouse/typed-columns.json; migrate merges it over the packaged mapping (a column of the same name replaces the packaged one, the others are added after them), so an upgrade keeps them (unset: the packaged mapping alone)', parse: readableFile }),
  // Tenants: one deployment per DATABASE_SCHEMA (docs/OPERATIONS.md, "Tenants").
  databaseRoles: defaulted({ env: 'DATABASE_ROLES', description: 'the group roles migrate grants the warehouse schema to: shared (billing_loader_writer and billing_loader_analyst, the same for every schema of the cluster) or schema (<DATABASE_SCHEMA>_writer and <DATABASE_SCHEMA>_analyst, granted on this schema only, so one tenant\'s logins cannot reach another\'s schema); the dashboard reads as the analyst role', defaultText: 'shared', default: () => 'shared' as RoleMode, parse: roleMode }),
  topicPrefix: defaulted({ env: 'TOPIC_PREFIX', description: 'prefix of every Kafka topic', defaultText: 'billing', default: () => 'billing', parse: topicPrefix }),
  topicPartitions: defaulted({ env: 'TOPIC_PARTITIONS', description: 'partitions of the topics the loader creates: webhooks, snapshots and the enricher\'s requests, delayed requests and heads, one count for all (DLQs: 1); up to this many enricher and sink instances share the work; an existing topic keeps its count (grow the enricher\'s with repartition)', defaultText: String(PIPELINE_PARTITIONS), default: () => PIPELINE_PARTITIONS, parse: positiveInt }),
  billingApiUrl: optional({ env: 'BILLING_API_URL', description: "the billing service's {base_url}; the loader appends /api/v1/ (required by enricher, backfill)", parse: url }),
  billingAuthUrl: optional({ env: 'BILLING_AUTH_URL', description: "the billing service's {auth_url}; the token endpoint is {auth_url}/oauth/token/ (required by enricher, backfill)", parse: url }),
  billingClientId: optional({ env: 'BILLING_CLIENT_ID', description: 'OAuth 2.0 client id (client credentials grant, or the app id of the password grant)', parse: str }),
  billingClientSecret: optional({ env: 'BILLING_CLIENT_SECRET', description: 'OAuth 2.0 client secret (client credentials grant)', parse: str, secret: true }),
  billingUsername: optional({ env: 'BILLING_USERNAME', description: 'user e-mail for the resource owner password grant', parse: str }),
  billingPassword: optional({ env: 'BILLING_PASSWORD', description: 'user password for the resource owner password grant', parse: str, secret: true }),
  billingApiRequestsPerSecond: defaulted({ env: 'BILLING_API_REQUESTS_PER_SECOND', description: 'request budget of the whole deployment: most requests per second sent to the billing service by all enricher instances together, token requests included (each takes the share of the request partitions it owns; backfill takes all of it); keep it below the service limit', defaultText: '20', default: () => 20, parse: positiveInt }),
  billingApiBurst: optional({ env: 'BILLING_API_BURST', description: 'request budget: requests allowed at once after an idle period, for the whole deployment like BILLING_API_REQUESTS_PER_SECOND (default: one second of it)', parse: positiveInt }),
  billingApiMaxConcurrency: defaulted({ env: 'BILLING_API_MAX_CONCURRENCY', description: 'request budget: most billing API requests in flight at once', defaultText: '8', default: () => 8, parse: positiveInt }),
  billingApiTimeoutMs: defaulted({ env: 'BILLING_API_TIMEOUT_MS', description: 'time limit of one billing API request, in milliseconds', defaultText: '10000', default: () => 10_000, parse: positiveInt }),
  billingLegalEntityId: optional({ env: 'BILLING_LEGAL_ENTITY_ID', description: 'the legal entity to act for, sent as X-SELECTED-LEGAL-ENTITY-ID on every billing API request (accounts with an entity hierarchy need it; unset: not sent)', parse: headerValue }),
  billingApiMaxAttempts: defaulted({ env: 'BILLING_API_MAX_ATTEMPTS', description: 'attempts per billing API call (429, 5xx, timeouts) before the call fails as retriable', defaultText: '6', default: () => 6, parse: positiveInt }),
  billingPathContract: defaulted({ env: 'BILLING_PATH_CONTRACT', description: 'path of contracts under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.Contract.path, default: () => RESOURCE_TYPE_INFO.Contract.path, parse: apiPath }),
  billingPathCustomer: defaulted({ env: 'BILLING_PATH_CUSTOMER', description: 'path of customers under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.Customer.path, default: () => RESOURCE_TYPE_INFO.Customer.path, parse: apiPath }),
  billingPathOrder: defaulted({ env: 'BILLING_PATH_ORDER', description: 'path of orders under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.Order.path, default: () => RESOURCE_TYPE_INFO.Order.path, parse: apiPath }),
  billingPathInvoice: defaulted({ env: 'BILLING_PATH_INVOICE', description: 'path of invoices under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.Invoice.path, default: () => RESOURCE_TYPE_INFO.Invoice.path, parse: apiPath }),
  billingPathInvoiceDraft: defaulted({ env: 'BILLING_PATH_INVOICE_DRAFT', description: 'path of invoice drafts under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.InvoiceDraft.path, default: () => RESOURCE_TYPE_INFO.InvoiceDraft.path, parse: apiPath }),
  billingPathDunning: defaulted({ env: 'BILLING_PATH_DUNNING', description: 'path of dunnings under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.Dunning.path, default: () => RESOURCE_TYPE_INFO.Dunning.path, parse: apiPath }),
  billingPathPaymentTransaction: defaulted({ env: 'BILLING_PATH_PAYMENT_TRANSACTION', description: 'path of payment transactions under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.PaymentTransaction.path, default: () => RESOURCE_TYPE_INFO.PaymentTransaction.path, parse: apiPath }),
  billingPathPaymentEscalationProcess: optional({ env: 'BILLING_PATH_PAYMENT_ESCALATION_PROCESS', description: 'path under {base_url}/api/v1/ of the escalation settings object a PaymentEscalated names (PaymentEscalationProcessId); unset: never read, since the service documents no such path', parse: apiPath }),
  billingPathPlan: defaulted({ env: 'BILLING_PATH_PLAN', description: 'path of plans under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.Plan.path, default: () => RESOURCE_TYPE_INFO.Plan.path, parse: apiPath }),
  billingPathPlanVariant: defaulted({ env: 'BILLING_PATH_PLAN_VARIANT', description: 'path of plan variants under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.PlanVariant.path, default: () => RESOURCE_TYPE_INFO.PlanVariant.path, parse: apiPath }),
  billingPathPlanGroup: defaulted({ env: 'BILLING_PATH_PLAN_GROUP', description: 'path of plan groups under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.PlanGroup.path, default: () => RESOURCE_TYPE_INFO.PlanGroup.path, parse: apiPath }),
  billingPathComponent: defaulted({ env: 'BILLING_PATH_COMPONENT', description: 'path of components under {base_url}/api/v1/', defaultText: RESOURCE_TYPE_INFO.Component.path, default: () => RESOURCE_TYPE_INFO.Component.path, parse: apiPath }),
  ingressPort: defaulted({ env: 'INGRESS_PORT', description: 'ingress HTTP port', defaultText: '8080', default: () => 8080, parse: port }),
  ingressTokens: optional({ env: 'INGRESS_TOKEN', description: 'optional secret path segment of the webhook URL (POST /webhooks/<token>); several, comma-separated, are all accepted (to rotate it: add the new one, re-register the URL, drop the old one once no delivery uses it)', parse: urlSegments, secret: true }),
  ingressMaxBodyBytes: defaulted({ env: 'INGRESS_MAX_BODY_BYTES', description: 'largest webhook body accepted, in bytes (larger: 413)', defaultText: '65536', default: () => 65536, parse: positiveInt }),
  ingressMaxPendingBytes: defaulted({ env: 'INGRESS_MAX_PENDING_BYTES', description: 'most bytes of accepted webhooks waiting for the Kafka ack at once; past it new webhooks get 503 at once', defaultText: '16777216', default: () => 16 * 1024 * 1024, parse: positiveInt }),
  ingressMaxConnections: defaulted({ env: 'INGRESS_MAX_CONNECTIONS', description: 'most open client connections to the ingress port; more are closed at once', defaultText: '1024', default: () => 1024, parse: positiveInt }),
  ingressHeadersTimeoutMs: defaulted({ env: 'INGRESS_HEADERS_TIMEOUT_MS', description: "time limit for a request's headers, in milliseconds (then 408 and the connection is closed)", defaultText: '10000', default: () => 10_000, parse: positiveInt }),
  ingressRequestTimeoutMs: defaulted({ env: 'INGRESS_REQUEST_TIMEOUT_MS', description: 'time limit for a whole request, headers and body, in milliseconds (at least INGRESS_HEADERS_TIMEOUT_MS)', defaultText: '30000', default: () => 30_000, parse: positiveInt }),
  ingressKeepAliveTimeoutMs: defaulted({ env: 'INGRESS_KEEP_ALIVE_TIMEOUT_MS', description: 'how long an idle keep-alive connection stays open, in milliseconds', defaultText: '5000', default: () => 5000, parse: positiveInt }),
  opsPort: optional({ env: 'OPS_PORT', description: 'port of /healthz, /readyz with reasons and /metrics; when set, the ingress port keeps only the webhooks, /healthz and a bare /readyz, and the enricher or sink run alone serve on it instead of ENRICHER_PORT or SINK_PORT', parse: port }),
  enricherCoalesceMs: defaulted({ env: 'ENRICHER_COALESCE_MS', description: 'longest wait, in milliseconds, for more fetch requests before the enricher reads a batch: requests for one resource within it share one fetch (0: read at once)', defaultText: '150', default: () => 150, parse: nonNegativeInt }),
  enricherNotFoundWindowMs: defaulted({ env: 'ENRICHER_NOT_FOUND_WINDOW_MS', description: 'how long, in milliseconds, a resource the loader has never seen is read again while the API answers 404 (read-after-write lag) before it is given up to the DLQ', defaultText: '300000', default: () => 300_000, parse: nonNegativeInt }),
  enricherGoneConfirmMs: defaulted({ env: 'ENRICHER_GONE_CONFIRM_MS', description: 'wait, in milliseconds, before the second read that confirms a 404 of a resource with versions (only then is a deletion version written)', defaultText: '10000', default: () => 10_000, parse: nonNegativeInt }),
  enricherUnreadableAttempts: defaulted({ env: 'ENRICHER_UNREADABLE_ATTEMPTS', description: 'reads of a resource whose 2xx body is not a JSON object before its request is given up to the DLQ', defaultText: '5', default: () => 5, parse: positiveInt }),
  enricherHangingTransactionMs: defaulted({ env: 'ENRICHER_HANGING_TRANSACTION_MS', description: "how long, in milliseconds, records the fetcher committed may stay hidden from read-committed readers (behind a transaction left open without markers) before it closes its transactions again; longer than the transactions' 60 s timeout", defaultText: '90000', default: () => 90_000, parse: positiveInt }),
  enricherEscalationSettingsIntervalMs: defaulted({ env: 'ENRICHER_ESCALATION_SETTINGS_INTERVAL_MS', description: 'with BILLING_PATH_PAYMENT_ESCALATION_PROCESS set: the least time, in milliseconds, between two reads of one escalation settings object (every escalation names the same object)', defaultText: '3600000', default: () => 3_600_000, parse: nonNegativeInt }),
  enricherStateDir: defaulted({ env: 'ENRICHER_STATE_DIR', description: "directory of the enricher's local copy of its heads (one LMDB file per owned partition); kept across restarts, it spares reading the whole heads topic again; deleting it only costs one full read", defaultText: 'billing-loader-state in the OS temp directory', default: () => join(tmpdir(), 'billing-loader-state'), parse: str }),
  enricherPort: defaulted({ env: 'ENRICHER_PORT', description: "enricher's health and metrics HTTP port when run alone", defaultText: '8081', default: () => 8081, parse: port }),
  sinkPort: defaulted({ env: 'SINK_PORT', description: "sink's health and metrics HTTP port when run alone", defaultText: '8082', default: () => 8082, parse: port }),
  sinkGroupId: optional({ env: 'SINK_GROUP_ID', description: "the sink's Kafka consumer group (unset: <TOPIC_PREFIX>.sink)", parse: topicPrefix }),
  sinkMetricsRefreshMs: defaulted({ env: 'SINK_METRICS_REFRESH_MS', description: 'pause, in milliseconds, between two refreshes of the metric rows kept at write time (each sink refreshes the contracts and payment transactions appended since the last one; until then the metric views compute those at each read); 0: this sink never refreshes', defaultText: '5000', default: () => 5000, parse: nonNegativeInt }),
  dashboardPort: defaulted({ env: 'DASHBOARD_PORT', description: "the analysts' dashboard's HTTP port (billing-loader dashboard)", defaultText: '8090', default: () => 8090, parse: port }),
  dashboardDatabaseUrl: optional({ env: 'DASHBOARD_DATABASE_URL', description: 'PostgreSQL connection string of the dashboard, which reads as billing_loader_analyst (DATABASE_ROLES=schema: <DATABASE_SCHEMA>_analyst) in read-only transactions whatever the login (unset: DATABASE_URL)', parse: postgresUrl, secret: true }),
  lagCheckIntervalMs: defaulted({ env: 'LAG_CHECK_INTERVAL_MS', description: "how often, in milliseconds, each stage's lag (committed offsets against partition ends, bytes waiting for Kafka) is checked for the lag and stall gauges and the stall watchdog", defaultText: '5000', default: () => 5000, parse: positiveInt }),
  watchdogStallMs: defaulted({ env: 'WATCHDOG_STALL_MS', description: "how long, in milliseconds, a stage may have work waiting without committing progress before the watchdog logs what it waits for and restarts the stage's consumers and producers (0: never)", defaultText: '180000', default: () => 180_000, parse: nonNegativeInt }),
  watchdogLivenessMs: defaulted({ env: 'WATCHDOG_LIVENESS_MS', description: 'how long, in milliseconds, a stage may stay stalled after the watchdog restarted it before /livez and /healthz answer 503 (for systemd or Kubernetes to restart the process)', defaultText: '120000', default: () => 120_000, parse: positiveInt }),
  heapGrowthPercent: defaulted({ env: 'HEAP_GROWTH_PERCENT', description: "how far a component's heap may outgrow its live data before a full garbage collection, in percent (0: V8's own rule, up to 300 %)", defaultText: String(DEFAULT_HEAP_GROWTH_PERCENT), default: () => DEFAULT_HEAP_GROWTH_PERCENT, parse: nonNegativeInt }),
  // Shutdown: how a rollout stops a component (docs/OPERATIONS.md, "Starting and stopping").
  shutdownTimeoutMs: defaulted({ env: 'SHUTDOWN_TIMEOUT_MS', description: "how long a component may take to stop after SIGTERM/SIGINT, in milliseconds, the ingress's INGRESS_SHUTDOWN_DELAY_MS included; past it the process exits 1. Keep it below the supervisor's grace period (Kubernetes terminationGracePeriodSeconds: 30 s by default; systemd TimeoutStopSec: 90 s by default)", defaultText: String(DEFAULT_SHUTDOWN_TIMEOUT_MS), default: () => DEFAULT_SHUTDOWN_TIMEOUT_MS, parse: positiveInt }),
  ingressShutdownDelayMs: defaulted({ env: 'INGRESS_SHUTDOWN_DELAY_MS', description: 'after SIGTERM/SIGINT, how long the ingress keeps accepting webhooks while /readyz answers 503, in milliseconds, so a load balancer stops sending to it before it drains (less than SHUTDOWN_TIMEOUT_MS; 0: drain at once)', defaultText: '0', default: () => 0, parse: nonNegativeInt }),
  logLevel: defaulted({ env: 'LOG_LEVEL', description: 'log level: debug, info, warn, error', defaultText: 'info', default: () => 'info' as LogLevel, parse: logLevel }),
  stackDir: defaulted({ env: 'STACK_DIR', description: 'where the local stack keeps downloads, data, logs and pid files', defaultText: '.stack in the package root', default: () => join(packageRoot, '.stack'), parse: str }),
};

type Options = typeof options;
export type OptionKey = keyof Options;

/**
 * The settings each part of the loader reads. Commands compose them, and each command's `--help`
 * lists exactly its composition, so a new setting shows up wherever its part runs.
 */
export const SETTINGS_OF = {
  kafka: ['kafkaBrokers', 'kafkaSsl', 'kafkaSslCaFile', 'kafkaSslCertFile', 'kafkaSslKeyFile', 'kafkaSaslMechanism', 'kafkaSaslUsername', 'kafkaSaslPassword', 'topicPrefix', 'topicPartitions'],
  registry: ['schemaRegistryUrl', 'schemaRegistryUsername', 'schemaRegistryPassword', 'schemaRegistryCaFile'],
  database: ['databaseUrl', 'databaseSchema'],
  billingApi: [
    'billingApiUrl', 'billingAuthUrl', 'billingClientId', 'billingClientSecret', 'billingUsername', 'billingPassword',
    'billingApiRequestsPerSecond', 'billingApiBurst', 'billingApiMaxConcurrency', 'billingApiTimeoutMs', 'billingApiMaxAttempts', 'billingLegalEntityId',
    'billingPathContract', 'billingPathCustomer', 'billingPathOrder', 'billingPathInvoice', 'billingPathInvoiceDraft', 'billingPathDunning',
    'billingPathPaymentTransaction', 'billingPathPaymentEscalationProcess', 'billingPathPlan', 'billingPathPlanVariant', 'billingPathPlanGroup', 'billingPathComponent',
  ],
  /** A long-running process: its ops port, logs and heap policy. */
  service: ['opsPort', 'logLevel', 'heapGrowthPercent', 'lagCheckIntervalMs', 'watchdogStallMs', 'watchdogLivenessMs', 'shutdownTimeoutMs'],
  ingress: ['ingressPort', 'ingressTokens', 'ingressMaxBodyBytes', 'ingressMaxPendingBytes', 'ingressMaxConnections', 'ingressHeadersTimeoutMs', 'ingressRequestTimeoutMs', 'ingressKeepAliveTimeoutMs', 'ingressShutdownDelayMs'],
  enricher: ['enricherCoalesceMs', 'enricherNotFoundWindowMs', 'enricherGoneConfirmMs', 'enricherUnreadableAttempts', 'enricherEscalationSettingsIntervalMs', 'enricherHangingTransactionMs', 'enricherStateDir'],
  sink: ['sinkGroupId'],
  /** What migrate applies and how it waits for locks (migrate, and replay --rebuild, which migrates its fresh schema). */
  migrate: ['migrateLockTimeoutMs', 'migrateLockAttempts', 'typedColumnsFile'],
} as const satisfies Record<string, readonly OptionKey[]>;

const S = SETTINGS_OF;

/** The settings each command reads: the parts it runs, plus its own. */
export const COMMAND_SETTINGS = {
  ingress: [...S.kafka, ...S.registry, ...S.ingress, ...S.service],
  enricher: [...S.kafka, ...S.registry, ...S.billingApi, ...S.enricher, 'enricherPort', ...S.service],
  sink: [...S.kafka, ...S.registry, ...S.database, ...S.sink, 'sinkMetricsRefreshMs', 'sinkPort', ...S.service],
  // The enricher's and the sink's own ports are for running them alone: run serves on INGRESS_PORT or OPS_PORT.
  run: [...S.kafka, ...S.registry, ...S.database, ...S.billingApi, ...S.ingress, ...S.enricher, ...S.sink, 'sinkMetricsRefreshMs', ...S.service],
  backfill: [...S.kafka, ...S.billingApi, 'logLevel'],
  // The demo runs the whole pipeline against its simulator (which stands in for the billing API) on a free ingress port.
  demo: [...S.kafka, ...S.registry, ...S.database, ...S.ingress.filter((k) => k !== 'ingressPort'), ...S.enricher, ...S.sink, 'sinkMetricsRefreshMs', 'opsPort', 'stackDir', 'logLevel', 'dashboardPort', 'lagCheckIntervalMs', 'watchdogStallMs', 'watchdogLivenessMs', 'shutdownTimeoutMs'],
  migrate: ['migrateDatabaseUrl', ...S.database, ...S.migrate, 'databaseRoles', 'logLevel'],
  repartition: [...S.kafka, 'logLevel'],
  dlq: [...S.kafka, ...S.registry, 'logLevel'],
  repair: [...S.kafka, ...S.registry, 'logLevel'],
  // After a database restore: reads the warehouse's stored offsets, moves the sink's groups (docs/OPERATIONS.md, Backup and restore).
  'repair-sink-offsets': [...S.kafka, ...S.database, ...S.sink, 'logLevel'],
  replay: [...S.kafka, ...S.registry, ...S.database, 'migrateDatabaseUrl', ...S.migrate, 'databaseRoles', ...S.sink, 'logLevel'],
  stack: ['stackDir'],
  dashboard: ['dashboardDatabaseUrl', ...S.database, 'databaseRoles', 'dashboardPort', ...S.service],
} as const satisfies Record<string, readonly OptionKey[]>;

export type CommandName = keyof typeof COMMAND_SETTINGS;
type ValueOf<K extends keyof Options> = Options[K] extends OptionSpec<infer T> ? T : never;
type HasDefault<K extends keyof Options> = Options[K] extends { hasDefault: true } ? K : never;

/** The parsed, validated, frozen configuration. Options without a default are `undefined` when unset. */
export type Config = {
  readonly [K in keyof Options as HasDefault<K>]: ValueOf<K>;
} & {
  readonly [K in keyof Options as Exclude<K, HasDefault<K>>]: ValueOf<K> | undefined;
};

/**
 * Parses and validates the environment once. A malformed value throws ConfigError naming the
 * variable, never echoing a secret value. Secrets are ordinary fields (so the config can be
 * spread and overridden); the logger redacts them by name (src/log.ts). `defaults.connections`
 * fills KAFKA_BROKERS, SCHEMA_REGISTRY_URL and DATABASE_URL when unset; without it they are required.
 */
export function loadConfig(env: Env, defaults: { connections?: Partial<ConnectionDefaults> } = {}): Config {
  const ctx: DefaultContext = { connections: defaults.connections };
  const config: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(options) as [string, OptionSpec<unknown>][]) {
    const given = spec.secret ? secretValue(env, spec.env) : envValue(env, spec.env);
    let value: unknown;
    if (given !== undefined) {
      try {
        value = spec.parse(given.raw);
      } catch (err) {
        if (err instanceof Invalid) throw new ConfigError(given.variable, spec.secret ? err.message.replace(/, got '.*'$/, '') : err.message);
        throw err;
      }
    } else {
      value = spec.default?.(ctx);
    }
    config[key] = value;
  }
  checkCrossFields(config as Config);
  return Object.freeze(config) as Config;
}

// --- Secrets from files (<VARIABLE>_FILE) ---------------------------------------------------

/** A setting's value from the environment (trimmed), and the variable it came from. */
function envValue(env: Env, variable: string): { raw: string; variable: string } | undefined {
  const raw = env[variable];
  return raw === undefined || raw === '' ? undefined : { raw: raw.trim(), variable };
}

/**
 * A secret's value: from its variable, or read from the file `<VARIABLE>_FILE` names (the
 * convention of the postgres and mariadb images, for Docker and Kubernetes secrets mounted as
 * files), with its trailing newline removed. Both at once is an error: which one wins would be a
 * guess.
 */
function secretValue(env: Env, variable: string): { raw: string; variable: string } | undefined {
  const fileVariable = `${variable}_FILE`;
  const direct = envValue(env, variable);
  const file = envValue(env, fileVariable);
  if (file === undefined) return direct;
  if (direct !== undefined) throw new ConfigError(fileVariable, `set either ${variable} or ${fileVariable}, not both`);
  let text: string;
  try {
    text = readFileSync(file.raw, 'utf8');
  } catch {
    throw new ConfigError(fileVariable, `no readable file at '${file.raw}'`);
  }
  return { raw: text.replace(/\r?\n$/, ''), variable: fileVariable };
}

function checkCrossFields(c: Config): void {
  if (c.billingClientSecret && c.billingPassword) {
    throw new ConfigError('BILLING_PASSWORD', 'set either BILLING_CLIENT_SECRET (client credentials) or BILLING_USERNAME/BILLING_PASSWORD (password grant), not both');
  }
  if (c.ingressHeadersTimeoutMs > c.ingressRequestTimeoutMs) throw new ConfigError('INGRESS_HEADERS_TIMEOUT_MS', `must not exceed INGRESS_REQUEST_TIMEOUT_MS (${c.ingressRequestTimeoutMs})`);
  if (c.billingPassword && !c.billingUsername) throw new ConfigError('BILLING_USERNAME', 'required with BILLING_PASSWORD (password grant)');
  if (c.ingressShutdownDelayMs >= c.shutdownTimeoutMs) throw new ConfigError('INGRESS_SHUTDOWN_DELAY_MS', `must be less than SHUTDOWN_TIMEOUT_MS (${c.shutdownTimeoutMs}), which includes it`);
  if (c.databaseRoles === 'schema' && c.databaseSchema.length > MAX_SCHEMA_FOR_ROLES) {
    throw new ConfigError('DATABASE_SCHEMA', `at most ${MAX_SCHEMA_FOR_ROLES} characters with DATABASE_ROLES=schema, so that its role names (<schema>_analyst) fit PostgreSQL's 63`);
  }
  checkKafkaSecurity(c);
}

function checkKafkaSecurity(c: Config): void {
  if (c.kafkaSaslMechanism) {
    if (!c.kafkaSaslUsername) throw new ConfigError('KAFKA_SASL_USERNAME', 'required with KAFKA_SASL_MECHANISM');
    if (!c.kafkaSaslPassword) throw new ConfigError('KAFKA_SASL_PASSWORD', 'required with KAFKA_SASL_MECHANISM');
  } else if (c.kafkaSaslUsername || c.kafkaSaslPassword) {
    throw new ConfigError('KAFKA_SASL_MECHANISM', `required with KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD: one of ${SASL_MECHANISMS.join(', ')}`);
  }
  // A CA or client certificate without TLS would be silently unused: the operator meant TLS.
  for (const [value, variable] of [[c.kafkaSslCaFile, 'KAFKA_SSL_CA_FILE'], [c.kafkaSslCertFile, 'KAFKA_SSL_CERT_FILE'], [c.kafkaSslKeyFile, 'KAFKA_SSL_KEY_FILE']] as const) {
    if (value && !c.kafkaSsl) throw new ConfigError('KAFKA_SSL', `set KAFKA_SSL=true to use ${variable}`);
  }
  if (c.kafkaSslCertFile && !c.kafkaSslKeyFile) throw new ConfigError('KAFKA_SSL_KEY_FILE', 'required with KAFKA_SSL_CERT_FILE (mutual TLS)');
  if (c.kafkaSslKeyFile && !c.kafkaSslCertFile) throw new ConfigError('KAFKA_SSL_CERT_FILE', 'required with KAFKA_SSL_KEY_FILE (mutual TLS)');
  if (c.schemaRegistryUsername && !c.schemaRegistryPassword) throw new ConfigError('SCHEMA_REGISTRY_PASSWORD', 'required with SCHEMA_REGISTRY_USERNAME');
  if (c.schemaRegistryPassword && !c.schemaRegistryUsername) throw new ConfigError('SCHEMA_REGISTRY_USERNAME', 'required with SCHEMA_REGISTRY_PASSWORD');
}

/** The settings the billing API client needs; fails with the variable to set when one is missing. */
export function requireBillingApi(c: Config): {
  apiUrl: string;
  authUrl: string;
  clientId: string;
  grant: { kind: 'client_credentials'; clientSecret: string } | { kind: 'password'; username: string; password: string };
} {
  const need = (value: string | undefined, variable: string): string => {
    if (!value) throw new ConfigError(variable, 'required by this command; see `billing-loader simulate` for a sandbox that prints these settings');
    return value;
  };
  const apiUrl = need(c.billingApiUrl, 'BILLING_API_URL');
  const authUrl = need(c.billingAuthUrl, 'BILLING_AUTH_URL');
  const clientId = need(c.billingClientId, 'BILLING_CLIENT_ID');
  if (c.billingPassword) {
    return { apiUrl, authUrl, clientId, grant: { kind: 'password', username: need(c.billingUsername, 'BILLING_USERNAME'), password: c.billingPassword } };
  }
  return { apiUrl, authUrl, clientId, grant: { kind: 'client_credentials', clientSecret: need(c.billingClientSecret, 'BILLING_CLIENT_SECRET') } };
}

/** The owner's connection string, for DDL (migrate, the fresh schema of a rebuild). */
export function migrateDatabaseUrl(c: Config): string {
  return c.migrateDatabaseUrl ?? c.databaseUrl;
}

/** The dashboard's connection string (its pool reads as the analyst role, whatever this login may do). */
export function dashboardDatabaseUrl(c: Config): string {
  return c.dashboardDatabaseUrl ?? c.databaseUrl;
}

/** Rows for `--help` and the README: variable, description, default (in declaration order; a command's `--help` keeps only its settings). */
export function describeOptions(command?: CommandName): { env: string; description: string; default: string }[] {
  const wanted: ReadonlySet<string> | undefined = command === undefined ? undefined : new Set(COMMAND_SETTINGS[command]);
  return Object.entries(options)
    .filter(([key]) => wanted === undefined || wanted.has(key))
    .map(([, o]: [string, OptionSpec<unknown>]) => ({ env: o.env, description: o.secret ? `${o.description}; or ${o.env}_FILE: a file holding it` : o.description, default: o.defaultText ?? 'none' }));
}

/** Parses a .env file's text (KEY=value lines) into an environment; real variables win over it. */
export async function envWithDotenv(env: Env, dotenvPath: string): Promise<Env> {
  const { readFile } = await import('node:fs/promises');
  const { parseEnv } = await import('node:util');
  let text: string;
  try {
    text = await readFile(dotenvPath, 'utf8');
  } catch {
    return env;
  }
  return { ...parseEnv(text), ...env };
}

/**
 * True when `npx` / `npm exec` started this process. npm runs it under `sh -c`, and that shell
 * does not pass a SIGTERM on: the process then stops when its parent exits (src/lifecycle.ts).
 */
export function startedByNpmExec(env: Env): boolean {
  return env.npm_command === 'exec' || env.npm_lifecycle_event === 'npx';
}

/** Field names of the secret options, for the logger's redaction list. */
export const SECRET_FIELDS: readonly string[] = Object.entries(options)
  .filter(([, o]) => (o as OptionSpec<unknown>).secret)
  .map(([key]) => key);

/** A URL with its password replaced, for printing (e.g. DATABASE_URL in a hint to the user). */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '****';
    return u.toString();
  } catch {
    return url;
  }
}
