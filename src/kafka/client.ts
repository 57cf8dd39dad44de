import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { Kafka, Partitioners, logLevel as KafkaLogLevel, type ISocketFactory, type LogEntry, type SASLOptions, type logCreator } from 'kafkajs';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../log.js';

export interface KafkaOptions {
  brokers: string[];
  /** Identifies this process to the broker (quotas, request logs). */
  clientId: string;
  log: Logger;
  /** Connection and request timeouts, in milliseconds. Defaults 3000 and 30000. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** TLS to the brokers (true: the system's trusted CAs). */
  ssl?: ConnectionOptions | boolean;
  sasl?: SASLOptions;
  /** How connections are opened (kafkaConnection's, to read the PEM files on each); default kafkajs's. */
  socketFactory?: ISocketFactory;
}

export type KafkaConnectionConfig = Pick<Config, 'kafkaBrokers' | 'kafkaSsl' | 'kafkaSslCaFile' | 'kafkaSslCertFile' | 'kafkaSslKeyFile' | 'kafkaSaslMechanism' | 'kafkaSaslUsername' | 'kafkaSaslPassword'>;

/**
 * Where and how to reach Kafka, from the configuration (loadConfig checked the combination):
 * spread into createKafka's options. With PEM files configured, the socket factory reads them
 * again for every connection it opens, so a CA or client certificate renewed on disk (by
 * cert-manager, Vault, a mounted secret) is used from the next reconnect on, without a restart.
 */
export function kafkaConnection(config: KafkaConnectionConfig): Pick<KafkaOptions, 'brokers' | 'ssl' | 'sasl' | 'socketFactory'> {
  const withFiles = Boolean(config.kafkaSslCaFile || config.kafkaSslCertFile || config.kafkaSslKeyFile);
  const ssl = config.kafkaSsl ? true : undefined;
  const sasl = saslOptions(config);
  return {
    brokers: config.kafkaBrokers,
    ...(ssl === undefined ? {} : { ssl }),
    ...(sasl === undefined ? {} : { sasl }),
    ...(config.kafkaSsl && withFiles ? { socketFactory: tlsSocketFactory(config) } : {}),
  };
}

/** The TLS options of the PEM files, read now. */
export function kafkaTlsFiles(config: Pick<KafkaConnectionConfig, 'kafkaSslCaFile' | 'kafkaSslCertFile' | 'kafkaSslKeyFile'>): ConnectionOptions {
  const tls: ConnectionOptions = {};
  if (config.kafkaSslCaFile) tls.ca = readFileSync(config.kafkaSslCaFile);
  if (config.kafkaSslCertFile) tls.cert = readFileSync(config.kafkaSslCertFile);
  if (config.kafkaSslKeyFile) tls.key = readFileSync(config.kafkaSslKeyFile);
  return tls;
}

/** kafkajs keeps idle broker connections alive with this probe delay; so does our factory. */
const KEEP_ALIVE_DELAY_MS = 60_000;

/** kafkajs's own socket factory, but with the PEM files read for each connection. */
function tlsSocketFactory(config: KafkaConnectionConfig): ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    const socket = tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...(typeof ssl === 'object' ? ssl : {}), ...kafkaTlsFiles(config) }, onConnect);
    socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
    return socket;
  };
}

function saslOptions(config: KafkaConnectionConfig): SASLOptions | undefined {
  const { kafkaSaslMechanism: mechanism, kafkaSaslUsername: username = '', kafkaSaslPassword: password = '' } = config;
  if (mechanism === 'plain') return { mechanism, username, password };
  if (mechanism === 'scram-sha-256') return { mechanism, username, password };
  if (mechanism === 'scram-sha-512') return { mechanism, username, password };
  return undefined;
}

/** Node's codes for a server certificate the client's CAs do not vouch for. */
const UNTRUSTED_CERTIFICATE = new Set(['SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY']);

/**
 * A refusal between the brokers and our settings (credentials refused, a broker certificate not
 * trusted) as the setting to fix, for the CLI's one-line error; undefined for any other failure.
 * Retrying cannot help with these, so a component stops at start instead of retrying forever.
 */
export function kafkaAccessError(err: unknown): ConfigError | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 8; depth++) {
    const { name, message, code } = e as { name?: unknown; message?: unknown; code?: unknown };
    if (name === 'KafkaJSSASLAuthenticationError') {
      return new ConfigError('KAFKA_SASL_PASSWORD', `the broker refused the credentials; check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD and KAFKA_SASL_MECHANISM (${String(message)})`);
    }
    if (typeof code === 'string' && UNTRUSTED_CERTIFICATE.has(code)) {
      return new ConfigError('KAFKA_SSL_CA_FILE', `the broker's certificate is not signed by a trusted CA (${code}); set KAFKA_SSL_CA_FILE to the PEM of the CA that signed it`);
    }
    const denied = authorizationFailure(e);
    if (denied) {
      return new ConfigError('KAFKA_SASL_USERNAME', `the brokers deny this user ${denied}; grant it the ACLs the loader needs (docs/OPERATIONS.md, Secured Kafka)`);
    }
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
      return new ConfigError('KAFKA_BROKERS', `the broker's certificate does not name the host connected to (${String(message)})`);
    }
    e = (e as { cause?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
  return undefined;
}

/** '<ERROR_TYPE> (on <topic>)' of a kafkajs error (or of one in its aggregate) the authorizer raised. */
function authorizationFailure(e: unknown): string | undefined {
  const all = [e, ...(((e as { errors?: unknown }).errors as unknown[] | undefined) ?? [])];
  for (const x of all) {
    const { type, topic } = (x ?? {}) as { type?: unknown; topic?: unknown };
    if (typeof type === 'string' && type.endsWith('_AUTHORIZATION_FAILED')) return `${type}${typeof topic === 'string' ? ` on ${topic}` : ''}`;
  }
  return undefined;
}

/** kafkajs logs through our logger, at our level, with its own fields kept as fields. */
function bridge(log: Logger): logCreator {
  return () => ({ namespace, level, log: entry }: LogEntry) => {
    const { message, timestamp: _t, logger: _l, ...fields } = entry as typeof entry & { logger?: unknown };
    const target = log.child({ kafkajs: namespace });
    // kafkajs logs every failed request at ERROR, including those it retries (e.g. a transaction
    // still completing: CONCURRENT_TRANSACTIONS); what really fails reaches our code as an error.
    const retried = namespace === 'Connection' || 'retryCount' in fields;
    if (level === KafkaLogLevel.ERROR && retried) target.warn(message, fields);
    else if (level === KafkaLogLevel.ERROR) target.error(message, fields);
    else if (level === KafkaLogLevel.WARN) target.warn(message, fields);
    else if (level === KafkaLogLevel.INFO) target.debug(message, fields); // kafkajs is chatty at INFO
    else target.debug(message, fields);
  };
}

/** The one place a kafkajs client is built; every component gets its Kafka from here. */
export function createKafka(options: KafkaOptions): Kafka {
  return new Kafka({
    clientId: options.clientId,
    brokers: options.brokers,
    ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
    ...(options.sasl === undefined ? {} : { sasl: options.sasl }),
    ...(options.socketFactory === undefined ? {} : { socketFactory: options.socketFactory }),
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    logLevel: KafkaLogLevel.INFO,
    logCreator: bridge(options.log),
    // Retries inside kafkajs are bounded; the stages retry around them with their own policy.
    retry: { initialRetryTime: 100, retries: 5, maxRetryTime: 5000 },
  });
}

/**
 * Java-compatible murmur2 key hashing: a key lands on the same partition number in every topic
 * with the same partition count, whichever client wrote it (co-partitioning relies on this).
 */
export const defaultPartitioner = Partitioners.DefaultPartitioner;

/**
 * Retry policy for idempotent and transactional producers: kafkajs keeps sequence numbers valid
 * only if it never gives up on a produce, so retries are unbounded (with capped backoff): a
 * stage waits out a broker outage instead of failing over it. Callers that must answer in
 * bounded time (the ingress) bound the wait themselves.
 */
export const EOS_RETRY = { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 100, maxRetryTime: 5000 };
