import { request } from 'undici';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { WebhookPayload } from './event-names.js';
import type { SeededRandom } from './seeded-random.js';

/** Delivery behaviour; spec 6.1 unless noted. */
export interface DeliveryOptions {
  /** Attempts per delivery in all, the first included, before it is dropped ("about a dozen", spec 6.1.5). Default 12. */
  maxAttempts: number;
  /**
   * Delay before the first repeat, in milliseconds; it doubles after every failed attempt
   * (spec 6.1.6). Default 1000. Upstream's base is not stated; about 85 s would give the "up to
   * two days" of spec 6.1.6 over 12 attempts, far too slow for a demo.
   */
  retryBaseDelayMs: number;
  /** How long one attempt may take before it counts as failed, in milliseconds. Default 10000. */
  attemptTimeoutMs: number;
  /** 301 redirects followed within one attempt (spec 6.1.4) before the attempt counts as failed. Default 5. */
  maxRedirects: number;
  /** Fraction (0..1) of events held back `lateDelayMs` before the first attempt (spec 6.1.7). Default 0. */
  lateRate: number;
  /** Hold-back of a late event, in milliseconds. Default 2000. */
  lateDelayMs: number;
  /** Fraction (0..1) of events delivered twice, as two independent deliveries (spec 6.1.7). Default 0. */
  duplicateRate: number;
  /** Fraction (0..1) of events held back a random time in [0, reorderWindowMs] so later ones overtake them (spec 6.1.7). Default 0. */
  reorderRate: number;
  /** Largest random hold-back of a reordered event, in milliseconds. Default 500. */
  reorderWindowMs: number;
}

export const DEFAULT_DELIVERY: Readonly<DeliveryOptions> = {
  maxAttempts: 12,
  retryBaseDelayMs: 1000,
  attemptTimeoutMs: 10_000,
  maxRedirects: 5,
  lateRate: 0,
  lateDelayMs: 2000,
  duplicateRate: 0,
  reorderRate: 0,
  reorderWindowMs: 500,
};

/** One POST (with the 301 hops it followed). */
export interface AttemptRecord {
  at: string;
  /** Final HTTP status of the attempt; absent when the request failed without one. */
  status?: number;
  error?: string;
  /** Locations followed because of a 301. */
  redirects: string[];
}

export interface DeliveryRecord {
  /** Sequence number of the event; a duplicate shares it with the original. */
  eventSeq: number;
  payload: WebhookPayload;
  url: string;
  /** The second delivery of a duplicated event. */
  duplicate: boolean;
  attempts: AttemptRecord[];
  /** The delays waited between attempts, in milliseconds: retryBaseDelayMs, then doubling. */
  retryDelaysMs: number[];
  /** `pending` until delivered (a success status), dropped (attempts exhausted) or abandoned (simulator stopped). */
  outcome: 'pending' | 'delivered' | 'dropped' | 'abandoned';
}

export interface DeliveryStats {
  deliveries: number;
  delivered: number;
  dropped: number;
  abandoned: number;
  pending: number;
  attempts: number;
}

/** Sends one POST; returns the status and Location. Injectable so unit tests can run on fake timers. `retryCount`: 0 on the first attempt, n on the n-th repeat (sent as X-Retry-Count). */
export type WebhookTransport = (url: string, body: string, timeoutMs: number, signal: AbortSignal, retryCount?: number) => Promise<{ status: number; location?: string }>;

/** Success statuses of spec 6.1.3; anything else (except a followed 301) causes a repeat. */
const SUCCESS = new Set([200, 201, 202, 204]);

/**
 * Delivers webhooks as spec 6.1 says: POST, JSON body, success only on 200/201/202/204,
 * 301 followed, repeated with doubling delays, dropped after the last attempt.
 */
export class WebhookDispatcher {
  private readonly records: DeliveryRecord[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly abort = new AbortController();
  private stopped = false;

  constructor(
    private readonly options: () => DeliveryOptions,
    private readonly random: SeededRandom,
    private readonly log: Logger,
    private readonly transport: WebhookTransport = httpTransport,
  ) {}

  /** Queues delivery of `payload` to `url` (after any late/reorder hold-back); also a duplicate when chosen. */
  dispatch(eventSeq: number, payload: WebhookPayload, url: string): void {
    if (this.stopped) return;
    const o = this.options();
    this.start(eventSeq, payload, url, false, this.holdBackMs(o));
    if (this.random.chance(o.duplicateRate)) this.start(eventSeq, payload, url, true, this.holdBackMs(o) + this.random.next() * o.reorderWindowMs);
  }

  deliveries(): DeliveryRecord[] {
    return structuredClone(this.records);
  }

  stats(): DeliveryStats {
    const count = (outcome: DeliveryRecord['outcome']) => this.records.filter((r) => r.outcome === outcome).length;
    return {
      deliveries: this.records.length,
      delivered: count('delivered'),
      dropped: count('dropped'),
      abandoned: count('abandoned'),
      pending: count('pending'),
      attempts: this.records.reduce((n, r) => n + r.attempts.length, 0),
    };
  }

  /** Cancels waiting and in-flight deliveries; they are recorded as abandoned. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.abort.abort();
    for (const r of this.records) if (r.outcome === 'pending') r.outcome = 'abandoned';
  }

  private holdBackMs(o: DeliveryOptions): number {
    let ms = 0;
    if (this.random.chance(o.lateRate)) ms += o.lateDelayMs;
    if (this.random.chance(o.reorderRate)) ms += this.random.next() * o.reorderWindowMs;
    return ms;
  }

  private start(eventSeq: number, payload: WebhookPayload, url: string, duplicate: boolean, delayMs: number): void {
    const record: DeliveryRecord = { eventSeq, payload, url, duplicate, attempts: [], retryDelaysMs: [], outcome: 'pending' };
    this.records.push(record);
    this.later(delayMs, () => this.attempt(record));
  }

  private later(ms: number, fn: () => Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      // attempt() records its own failures; nothing here can reject.
      void fn();
    }, ms);
    this.timers.add(timer);
  }

  private async attempt(record: DeliveryRecord): Promise<void> {
    const o = this.options();
    const body = JSON.stringify(record.payload);
    const attempt: AttemptRecord = { at: new Date().toISOString(), redirects: [] };
    record.attempts.push(attempt);
    let url = record.url;
    try {
      for (;;) {
        // A repeat carries `X-Retry-Count: n`, n = 1 on the first repeat (documented by the service, docs/SIMULATOR.md).
        const res = await this.transport(url, body, o.attemptTimeoutMs, this.abort.signal, record.attempts.length - 1);
        attempt.status = res.status;
        if (res.status !== 301 || !res.location || attempt.redirects.length >= o.maxRedirects) break;
        url = new URL(res.location, url).toString();
        attempt.redirects.push(url);
      }
    } catch (err) {
      attempt.error = errorMessage(err);
    }
    if (this.stopped) return;
    if (attempt.status !== undefined && SUCCESS.has(attempt.status)) {
      record.outcome = 'delivered';
      return;
    }
    if (record.attempts.length >= o.maxAttempts) {
      record.outcome = 'dropped';
      this.log.warn('webhook dropped after the last attempt', { event: record.payload.Event, attempts: record.attempts.length, status: attempt.status, error: attempt.error });
      return;
    }
    const delay = o.retryBaseDelayMs * 2 ** (record.attempts.length - 1);
    record.retryDelaysMs.push(delay);
    this.log.debug('webhook attempt failed, repeating', { event: record.payload.Event, attempt: record.attempts.length, status: attempt.status, error: attempt.error, delayMs: delay });
    this.later(delay, () => this.attempt(record));
  }
}

async function httpTransport(url: string, body: string, timeoutMs: number, signal: AbortSignal, retryCount = 0): Promise<{ status: number; location?: string }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(retryCount > 0 ? { 'x-retry-count': String(retryCount) } : {}) },
    body,
    signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
  });
  await res.body.dump();
  const location = res.headers.location;
  return { status: res.statusCode, ...(typeof location === 'string' ? { location } : {}) };
}
