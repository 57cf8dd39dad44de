import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { PendingLimitError, ProduceTimeoutError, type BatchProducer } from './batch-producer.js';
import type { IngressMetrics } from './ingress-metrics.js';
import { parseWebhook } from './parse-webhook.js';
import { readBody } from './read-body.js';
import { recordKey } from './record-key.js';
import { isJsonContentType, tokenMatcher } from './request-checks.js';
import { toWebhookRecord, type WebhookRecord } from '../wire/webhook-record.js';

export interface WebhookRouteDeps {
  log: Logger;
  producer: BatchProducer;
  /** Avro-encodes a record in the Confluent wire format under the registered schema. */
  encode(record: WebhookRecord): Promise<Buffer>;
  metrics: IngressMetrics;
  maxBodyBytes: number;
  /** INGRESS_MAX_PENDING_BYTES: once the producer holds this much, a webhook is refused before its body is read. */
  maxPendingBytes: number;
  /** The secret path segments (several during a rotation), when configured; the route then has a `:token` parameter. */
  tokens: readonly string[] | undefined;
  /** True once shutdown began: new webhooks get 503 so the sender retries elsewhere or later. */
  isStopping(): boolean;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Handles one webhook; `givenToken` is the path segment after `/webhooks/`, if any. Takes node's
 * own request and response (not Express's): see ingress.ts for why.
 */
export type WebhookHandler = (req: IncomingMessage, res: ServerResponse, givenToken: string | undefined) => Promise<void>;

/**
 * POST /webhooks[/<token>] (docs/CONTRACT.md section 3). The 200 goes out only after the broker
 * acknowledged the record; every rejection is `{"error": ...}` and writes nothing. Logs carry
 * the event name, identifiers and event_id only: never the body, the token or header values.
 */
export function webhookHandler(deps: WebhookRouteDeps): WebhookHandler {
  const { log, metrics } = deps;
  const tokenMatches = deps.tokens === undefined ? undefined : tokenMatcher(deps.tokens);
  const reply = (res: ServerResponse, status: number, body: object) => {
    metrics.requests.inc({ status: String(status) });
    const json = JSON.stringify(body);
    // What Express's res.json sends, without Express's cost (see ingress.ts).
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(json) }).end(json);
  };

  return async (req, res, givenToken) => {
    metrics.inFlight.inc();
    try {
      await handle(req, res, givenToken);
    } catch (err) {
      // Only a bug gets here (parsing and Kafka failures are answered inside handle).
      log.error('webhook handling failed', { err: errorMessage(err) });
      if (!res.headersSent) reply(res, 500, { error: 'internal error' });
    } finally {
      metrics.inFlight.dec();
    }
  };

  function refuseOverBound(res: ServerResponse): void {
    // The sender retries (spec 6.1); memory stays bounded while the broker does not answer.
    res.setHeader('Retry-After', '1');
    reply(res, 503, { error: `${new PendingLimitError(deps.maxPendingBytes).message}; retry later` });
  }

  async function handle(req: IncomingMessage, res: ServerResponse, givenToken: string | undefined): Promise<void> {
    if (tokenMatches && !tokenMatches(givenToken ?? '')) return reply(res, 404, { error: 'not found' });
    if (deps.isStopping()) return reply(res, 503, { error: 'the ingress is shutting down; retry later' });
    if (!isJsonContentType(req.headers['content-type'])) return reply(res, 415, { error: 'Content-Type must be application/json (UTF-8)' });
    if (deps.producer.pendingBytes() >= deps.maxPendingBytes) {
      // The body is not worth reading: close the connection after the answer.
      res.setHeader('Connection', 'close');
      req.resume();
      return refuseOverBound(res);
    }

    let read;
    try {
      read = await readBody(req, deps.maxBodyBytes);
    } catch {
      metrics.requests.inc({ status: 'aborted' });
      return;
    }
    if (!read.ok) {
      // The rest of an oversized body is not worth reading: close the connection after the answer.
      res.setHeader('Connection', 'close');
      return reply(res, 413, { error: `body is larger than ${deps.maxBodyBytes} bytes` });
    }
    const receivedAtMs = Date.now();
    metrics.receivedBytes.inc(read.body.length);

    let text: string;
    try {
      text = utf8.decode(read.body);
    } catch {
      return reply(res, 400, { error: 'body is not valid UTF-8' });
    }
    const parsed = parseWebhook(text);
    if (!parsed.ok) {
      log.debug('webhook rejected', { reason: parsed.error });
      return reply(res, 400, { error: parsed.error });
    }

    const eventId = randomUUID();
    const key = recordKey(parsed.webhook.fields, eventId);
    const retryHeader = req.headers['x-retry-count'];
    const retryCount = Array.isArray(retryHeader) ? retryHeader[0] : retryHeader;
    const value = await deps.encode(toWebhookRecord(parsed.webhook, { eventId, receivedAtMs, body: text, ...(retryCount !== undefined ? { retryCount } : {}) }));
    const ids = { event: parsed.webhook.event, event_id: eventId, key };
    const endTimer = metrics.produceSeconds.startTimer();
    try {
      await deps.producer.send({ key, value });
    } catch (err) {
      if (err instanceof PendingLimitError) return refuseOverBound(res);
      endTimer({ outcome: 'error' });
      log.warn('webhook not persisted, answered 503', { ...ids, err: errorMessage(err) });
      // The sender sees why in general terms; broker addresses and client internals stay in the log.
      const why = err instanceof ProduceTimeoutError ? err.message : 'Kafka is unavailable';
      return reply(res, 503, { error: `the event could not be persisted (${why}); retry later` });
    }
    endTimer({ outcome: 'ok' });
    log.debug('webhook accepted', ids);
    reply(res, 200, { event_id: eventId });
  }
}
