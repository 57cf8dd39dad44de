import { Kafka, Partitioners, logLevel as KafkaLogLevel, type LogEntry, type logCreator } from 'kafkajs';
import type { Logger } from '../log.js';

export interface KafkaOptions {
  brokers: string[];
  /** Identifies this process to the broker (quotas, request logs). */
  clientId: string;
  log: Logger;
  /** Connection and request timeouts, in milliseconds. Defaults 3000 and 30000. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
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
