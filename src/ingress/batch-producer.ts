import type { Kafka, Producer } from 'kafkajs';
import { LoaderError, errorMessage } from '../errors.js';
import { createIdempotentProducer } from '../kafka/producers.js';
import type { Logger } from '../log.js';

export interface BatchProducerOptions {
  kafka: Kafka;
  topic: string;
  log: Logger;
  /**
   * Longest time one record may wait, queued or in flight, for the broker's ack; its `send` then
   * rejects with ProduceTimeoutError. The write may still land later (see docs/INGRESS.md).
   */
  timeoutMs: number;
  /** Wait before a batch goes out when no produce request is in flight, in ms (0: next event-loop turn). */
  lingerMs: number;
  /** Largest batch, in records and in value+key bytes (the broker refuses batches over message.max.bytes, 1 MiB by default). */
  maxBatchMessages: number;
  maxBatchBytes: number;
  /**
   * Most value+key bytes held at once for records not yet acknowledged (queued or in flight);
   * a `send` past it rejects at once with PendingLimitError instead of queueing. One record is
   * always taken when nothing is pending, however large.
   */
  maxPendingBytes: number;
  /** Called once per produce request with its size. */
  onBatch?: (records: number) => void;
}

export interface KeyedValue {
  key: string;
  value: Buffer;
}

/**
 * Writes records to one topic through a kafkajs idempotent producer, acks from all in-sync
 * replicas, batching whatever concurrent callers hand over while the previous produce request is
 * in flight. Each `send` resolves only after the broker acknowledged the batch holding its
 * record, and rejects (retriable LoaderError) on failure or after `timeoutMs`.
 */
export interface BatchProducer {
  connect(): Promise<void>;
  send(record: KeyedValue): Promise<void>;
  /** Value+key bytes of the records held until the broker acknowledges them (or they are dropped). */
  pendingBytes(): number;
  /** Records the broker acknowledged so far. */
  acknowledged(): number;
  /**
   * Gives up on the produce request in flight (its records time out as usual) and sends the next
   * batch through a new producer: the stall watchdog's cure for a request that never ends.
   */
  restart(): void;
  /** Waits for the queued records and the produce request in flight, at most `maxWaitMs`. */
  drain(maxWaitMs: number): Promise<void>;
  disconnect(): Promise<void>;
}

/** The broker did not acknowledge in time: the record may or may not be written. */
export class ProduceTimeoutError extends LoaderError {
  constructor(timeoutMs: number) {
    super(`Kafka did not acknowledge the write within ${timeoutMs} ms`, { retriable: true });
  }
}

/** Too many bytes already wait for the broker: the record was not queued, nothing was written. */
export class PendingLimitError extends LoaderError {
  constructor(maxPendingBytes: number) {
    super(`too many webhooks are waiting for Kafka (over ${maxPendingBytes} bytes)`, { retriable: true });
  }
}

interface Pending {
  record: KeyedValue;
  bytes: number;
  settled: boolean;
  /** Part of the produce request in flight (its bytes stay held until that request ends). */
  sending: boolean;
  /** Its bytes no longer count as pending. */
  released: boolean;
  resolve(): void;
  reject(err: unknown): void;
  timer?: NodeJS.Timeout;
}

export function createBatchProducer(options: BatchProducerOptions): BatchProducer {
  const { kafka, topic, log } = options;
  // kafkajs's idempotence rules: acks -1, retries unbounded (its default for idempotent producers;
  // a bound "may invalidate EoS guarantees"), one request in flight per broker. Our callers are
  // bounded by timeoutMs instead, independently of kafkajs's retries.
  const newProducer = (): Producer => createIdempotentProducer(kafka);
  let producer = newProducer();
  let connected = false;
  let queue: Pending[] = [];
  let inFlight: Promise<void> | undefined;
  let flushTimer: NodeJS.Timeout | undefined;
  let flushScheduled = false;
  let pendingBytes = 0;
  let acknowledged = 0;

  const release = (p: Pending) => {
    if (p.released) return;
    p.released = true;
    pendingBytes -= p.bytes;
  };

  const settle = (p: Pending, err?: unknown) => {
    if (p.settled) return;
    p.settled = true;
    clearTimeout(p.timer);
    if (err === undefined) p.resolve();
    else p.reject(err);
  };

  const schedule = () => {
    if (flushScheduled || inFlight || queue.length === 0) return;
    flushScheduled = true;
    const run = () => {
      flushScheduled = false;
      flushTimer = undefined;
      flush();
    };
    if (options.lingerMs > 0) flushTimer = setTimeout(run, options.lingerMs);
    else setImmediate(run);
  };

  const takeBatch = (): Pending[] => {
    // Records whose caller already gave up (timeout) are dropped here, never written.
    queue = queue.filter((p) => !p.settled);
    let bytes = 0;
    let count = 0;
    while (count < queue.length && count < options.maxBatchMessages) {
      const next = queue[count] as Pending;
      if (count > 0 && bytes + next.bytes > options.maxBatchBytes) break;
      bytes += next.bytes;
      count++;
    }
    const batch = queue.splice(0, count);
    for (const p of batch) p.sending = true;
    return batch;
  };

  const flush = () => {
    if (inFlight) return;
    const batch = takeBatch();
    if (batch.length === 0) return;
    const request: Promise<void> = produce(batch).finally(() => {
      // A restart may have given this request up and started another meanwhile.
      if (inFlight === request) inFlight = undefined;
      schedule();
    });
    inFlight = request;
  };

  const produce = async (batch: Pending[]): Promise<void> => {
    options.onBatch?.(batch.length);
    try {
      if (!connected) await reconnect();
      await producer.send({ topic, acks: -1, timeout: options.timeoutMs, messages: batch.map((p) => p.record) });
      for (const p of batch) settle(p);
      acknowledged += batch.length;
    } catch (err) {
      log.warn('kafka write failed', { topic, records: batch.length, err: errorMessage(err) });
      // kafkajs rolls its sequence numbers back when a produce request fails. If that request did
      // reach the log (only its answer was lost), the next batch would reuse its sequence numbers
      // and the broker would drop it as a duplicate while acknowledging it: an acked loss. A fresh
      // producer (new producer id) before the next batch rules that out; a duplicate is harmless.
      connected = false;
      const failure = new LoaderError(`Kafka write failed: ${errorMessage(err)}`, { retriable: true, cause: err });
      for (const p of batch) settle(p, failure);
    } finally {
      for (const p of batch) release(p);
    }
  };

  const reconnect = async () => {
    const old = producer;
    producer = newProducer();
    await old.disconnect().catch((err: unknown) => log.debug('closing the previous producer failed', { err: errorMessage(err) }));
    await producer.connect();
    connected = true;
  };

  return {
    async connect() {
      await producer.connect();
      connected = true;
    },
    send(record) {
      return new Promise<void>((resolve, reject) => {
        const bytes = record.value.length + Buffer.byteLength(record.key);
        // A record larger than the whole bound is still taken when nothing else waits: refusing
        // it would refuse it forever, and its sender would retry it forever.
        if (pendingBytes > 0 && pendingBytes + bytes > options.maxPendingBytes) {
          reject(new PendingLimitError(options.maxPendingBytes));
          return;
        }
        const pending: Pending = { record, bytes, settled: false, sending: false, released: false, resolve, reject };
        pendingBytes += bytes;
        pending.timer = setTimeout(() => {
          settle(pending, new ProduceTimeoutError(options.timeoutMs));
          // A queued record given up on is never written: free it now, not at the next batch, which
          // a broker that stopped answering may hold back indefinitely. Records time out in the
          // order they were queued, so the given-up ones sit at the head of the queue. One in
          // flight stays in memory until its request ends.
          if (pending.sending) return;
          release(pending);
          while (queue[0]?.settled) queue.shift();
        }, options.timeoutMs);
        queue.push(pending);
        schedule();
      });
    },
    pendingBytes: () => pendingBytes,
    acknowledged: () => acknowledged,
    restart() {
      connected = false;
      inFlight = undefined;
      schedule();
    },
    async drain(maxWaitMs) {
      const deadline = Date.now() + maxWaitMs;
      while ((inFlight || queue.some((p) => !p.settled)) && Date.now() < deadline) {
        const tick = new Promise<void>((resolve) => setTimeout(resolve, 10));
        await Promise.race([inFlight ?? tick, tick]);
      }
    },
    async disconnect() {
      if (flushTimer) clearTimeout(flushTimer);
      for (const p of queue) {
        settle(p, new LoaderError('the producer was closed before this record was sent', { retriable: true }));
        release(p);
      }
      queue = [];
      await producer.disconnect();
    },
  };
}
