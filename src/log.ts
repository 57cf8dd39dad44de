import { pino, type Logger as PinoLogger } from 'pino';
import { VERSION } from './version.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/**
 * The loader's structured logger: constant message text, identifiers in fields
 * (`log.warn('snapshot fetch failed', { resourceType, resourceId, err })`).
 * JSON lines on stderr, so stdout stays free for what a command prints for the user or a script.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose every line also carries `fields` (e.g. `{ component: 'sink' }`). */
  child(fields: Record<string, unknown>): Logger;
}

/**
 * Field names whose values are never written, whatever logs them: generic secret names, and the
 * configuration's secret fields (databaseUrl may hold a password), at the top level or one down.
 */
const SECRET_NAMES = ['password', 'secret', 'token', 'authorization', 'accessToken', 'clientSecret', 'databaseUrl', 'migrateDatabaseUrl', 'dashboardDatabaseUrl', 'billingClientSecret', 'billingPassword', 'ingressTokens', 'kafkaSaslPassword', 'schemaRegistryPassword'];
const REDACT = [...SECRET_NAMES, ...SECRET_NAMES.map((n) => `*.${n}`)];

/**
 * `service` names the process's role (ingress, enricher, sink, run, migrate, …; default
 * billing-loader) on every line, beside the package version, so a log pipeline that gathers many
 * processes can tell them and their builds apart.
 */
export function createLogger(level: LogLevel = 'info', destination: NodeJS.WritableStream | number = 2, options: { service?: string } = {}): Logger {
  const base = pino(
    {
      level,
      base: { pid: process.pid, service: options.service ?? 'billing-loader', version: VERSION },
      redact: { paths: REDACT, censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    typeof destination === 'number' ? pino.destination({ fd: destination, sync: false }) : destination,
  );
  return wrap(base);
}

function wrap(p: PinoLogger): Logger {
  return {
    debug: (msg, fields) => p.debug(fields ?? {}, msg),
    info: (msg, fields) => p.info(fields ?? {}, msg),
    warn: (msg, fields) => p.warn(fields ?? {}, msg),
    error: (msg, fields) => p.error(fields ?? {}, msg),
    child: (fields) => wrap(p.child(fields)),
  };
}

/** A logger that drops everything; for unit tests of code that takes a logger. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
