import type { Registry } from 'prom-client';
import { Agent } from 'undici';
import { RetriesExhaustedError, classifyHttpStatus, type ErrorContext } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { retry } from '../retry.js';
import { ApiAuthError, ApiRejectedError, ApiUnavailableError, TransientApiError } from './api-errors.js';
import { createBillingApiMetrics } from './api-metrics.js';
import { createHttpSender, type HttpResponse } from './http-exchange.js';
import { followRedirects } from './redirects.js';
import { splitJsonArray } from './json-array.js';
import { createRequestBudget } from './request-budget.js';
import { collectionPath, encodeResourceId, resourcePath } from './resource-path.js';
import { RESOURCE_TYPE_INFO, type ResourceType } from './resource-types.js';
import { parseRetryAfterMs } from './retry-after.js';
import { createTokenProvider, type BillingGrant } from './token-provider.js';

export interface BillingApiClientOptions {
  /** The service's `{base_url}`; resources live under `{base_url}/api/v1/` (spec 4.2, 9.1). */
  apiUrl: string;
  /** The service's `{auth_url}`; the token endpoint is `{auth_url}/oauth/token/` (spec 5.9). */
  authUrl: string;
  clientId: string;
  grant: BillingGrant;
  /** Request budget: requests started per second, token requests included. Default 20. */
  requestsPerSecond?: number;
  /** Request budget: requests allowed at once after an idle period. Default `ceil(requestsPerSecond)`. */
  burst?: number;
  /** Request budget: requests in flight at once; also the keep-alive connections per origin. Default 8. */
  maxConcurrency?: number;
  /** Time limit of one HTTP request (headers and body), in milliseconds. Default 10000. */
  requestTimeoutMs?: number;
  /** Attempts per call, the first included, before ApiUnavailableError. Default 6. */
  maxAttempts?: number;
  /** First backoff after a 5xx, timeout or connection error, in milliseconds (full jitter, doubling). Default 200. */
  minBackoffMs?: number;
  /** Backoff ceiling, in milliseconds. Default 10000. */
  maxBackoffMs?: number;
  /** Longest Retry-After waited in-process, in milliseconds; a longer one fails the call at once with ApiUnavailableError.retryAfterMs. Default 60000. */
  maxRetryAfterMs?: number;
  /** Sent as `X-SELECTED-LEGAL-ENTITY-ID` on every resource and list request (accounts with an entity hierarchy need it). Default: not sent. */
  legalEntityId?: string;
  /** Path of each resource type under `/api/v1/`. Default RESOURCE_TYPE_INFO paths (docs/CONTRACT.md). */
  paths?: Partial<Record<ResourceType, string>>;
  /** Default silent. Never receives tokens or secrets. */
  logger?: Logger;
  /** Where the `billing_loader_api_*` metrics go. Default a private registry. */
  registry?: Registry;
}

/** A resource as fetched: `body` is the response text exactly as received (UTF-8), never re-serialised. */
export type FetchedResource = { kind: 'found'; body: string; status: number } | { kind: 'gone'; status: 404 | 410 };

/**
 * One page of a resource list (docs/BILLING-API.md, assumption 5 "Paging"): `GET /api/v1/{Type}s?from=<Id>&take=`
 * (a stable cursor, `from` inclusive, ordered by the service) or `?skip=&take=` where no cursor
 * exists. The service answers a bare JSON array; a page shorter than `take` is the last.
 */
export interface ResourcePage {
  /** The exact JSON text of each element, in the order received. */
  items: string[];
  take: number;
  /** The page held fewer than `take` items: nothing follows it. */
  last: boolean;
}

/** Where a list page starts: at an object's id (inclusive) or after `skip` objects; neither: the first page. */
export interface PageRequest {
  from?: string;
  skip?: number;
  take?: number;
}

export interface CallOptions {
  /** Abandons the call (waiting for the budget, a backoff or the answer); it rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface BillingApiClient {
  /**
   * Fetches one resource. Resolves `found` (2xx) or `gone` (404/410). Rejects with
   * ApiUnavailableError (retriable: pause, try later), ApiAuthError (configuration: pause,
   * not-ready) or ApiRejectedError (this identifier: DLQ). See docs/BILLING-API.md.
   */
  getResource(type: ResourceType, id: string, options?: CallOptions): Promise<FetchedResource>;
  /** Fetches one page of a type's resources, for the backfill. Rejects like getResource; a 404 is ApiRejectedError (wrong BILLING_PATH_*), and so is a refused `skip` (400). */
  listResources(type: ResourceType, page?: PageRequest, options?: CallOptions): Promise<ResourcePage>;
  /**
   * This process's fraction (0..1] of `requestsPerSecond` and `burst`: an enricher's share of a
   * deployment-wide budget, by the request partitions it owns (docs/ARCHITECTURE.md).
   */
  setRequestShare(share: number): void;
  /** Closes the keep-alive connections; in-flight calls fail. */
  close(): Promise<void>;
}

/** Page size of listResources when `take` is not given: the service's documented maximum. */
export const DEFAULT_PAGE_SIZE = 500;
/** The largest `take` the service documents ("500 max."); a larger one would be cut and break "a short page is the last". */
export const MAX_PAGE_SIZE = 500;

/**
 * The billing API client: one token shared by every call, one request budget, every answer
 * classified in one place (`call` below) with `classifyHttpStatus`.
 */
export function createBillingApiClient(options: BillingApiClientOptions): BillingApiClient {
  const log = (options.logger ?? silentLogger).child({ component: 'billing-api' });
  const metrics = createBillingApiMetrics(options.registry);
  const maxConcurrency = options.maxConcurrency ?? 8;
  const agent = new Agent({ connections: maxConcurrency, keepAliveTimeout: 30_000 });
  const budget = createRequestBudget({ requestsPerSecond: options.requestsPerSecond ?? 20, burst: options.burst, maxConcurrency, maxRateLimitPauseMs: options.maxRetryAfterMs ?? 60_000, onRateChange: (rate) => metrics.budgetRate.set(rate) });
  metrics.budgetRate.set(budget.currentRate());
  const send = followRedirects(createHttpSender({ dispatcher: agent, budget, timeoutMs: options.requestTimeoutMs ?? 10_000, metrics }));
  const tokens = createTokenProvider({ authUrl: options.authUrl, clientId: options.clientId, grant: options.grant, send, metrics, logger: log });
  const api = new URL(options.apiUrl);
  const maxAttempts = options.maxAttempts ?? 6;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
  const typePath = (type: ResourceType): string => options.paths?.[type] ?? RESOURCE_TYPE_INFO[type].path;
  const entityHeader: Record<string, string> = options.legalEntityId !== undefined ? { 'x-selected-legal-entity-id': options.legalEntityId } : {};

  /** One logical call: attempts, token renewal on 401, and the verdict on every status. */
  async function call(path: string, endpoint: 'resource' | 'list', context: ErrorContext, signal: AbortSignal | undefined): Promise<HttpResponse> {
    let renewed = false;
    const attempt = async (bail: (err: unknown) => never): Promise<HttpResponse> => {
      const token = await tokens.get();
      const res = await send({ origin: api.origin, path, method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...entityHeader }, endpoint, resourceType: context.resourceType ?? '', signal });
      const ctx = { ...context, status: res.status };
      // The same answer on every attempt: the API's address or the service's setup is wrong, not the identifier.
      if (res.status >= 300 && res.status < 400) bail(new ApiAuthError(`the billing API answered a redirect the loader does not follow (${res.redirectRefused ?? `HTTP ${res.status}`}); check BILLING_API_URL`, { context: ctx }));
      switch (classifyHttpStatus(res.status)) {
        case 'ok':
        case 'gone':
          return res;
        case 'rate-limited': {
          const retryAfterMs = parseRetryAfterMs(res.headers['retry-after']);
          if (retryAfterMs !== undefined && retryAfterMs > maxRetryAfterMs) bail(new ApiUnavailableError(`the billing service asks to wait ${Math.ceil(retryAfterMs / 1000)} s (HTTP 429)`, { context: ctx, retryAfterMs }));
          // Without Retry-After (the service documents none) the budget's own growing pause holds
          // every caller; the call itself backs off with jitter like after a 5xx.
          throw new TransientApiError('rate-limited (HTTP 429)', { reason: 'rate-limited', ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), context: ctx });
        }
        case 'retry':
          throw new TransientApiError(`server error (HTTP ${res.status})`, { reason: 'server-error', retryAfterMs: cap(parseRetryAfterMs(res.headers['retry-after']), maxRetryAfterMs), context: ctx });
        case 'unauthorized':
          if (renewed) bail(new ApiAuthError('the billing service refuses a freshly obtained token (HTTP 401 after renewal); check the client credentials and their permissions', { context: ctx }));
          renewed = true;
          await tokens.renew(token);
          throw new TransientApiError('token refused (HTTP 401), renewed', { reason: 'unauthorized', retryAfterMs: 0, context: ctx });
        case 'forbidden':
          return bail(new ApiAuthError('the billing service forbids this request (HTTP 403); check the permissions of the client credentials', { context: ctx }));
        case 'bad-request':
          return bail(new ApiRejectedError(`the billing service rejected the request (HTTP ${res.status})`, { context: ctx }));
      }
    };
    try {
      return await retry(attempt, {
        attempts: maxAttempts,
        minDelayMs: options.minBackoffMs ?? 200,
        maxDelayMs: options.maxBackoffMs ?? 10_000,
        shouldRetry: (err) => err instanceof TransientApiError,
        retryAfterMs: (err) => (err instanceof TransientApiError ? err.retryAfterMs : undefined),
        onRetry: (err, n, delayMs) => {
          const reason = err instanceof TransientApiError ? err.reason : 'other';
          metrics.retries.inc({ reason });
          log.debug('billing API attempt failed, retrying', { ...context, reason, attempt: n, delayMs, err });
        },
        signal,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw asCallerError(err, context);
    }
  }

  return {
    async getResource(type, id, callOptions = {}) {
      const context = { resourceType: type, resourceId: id };
      const res = await call(resourcePath(api.pathname, typePath(type), id, type), 'resource', context, callOptions.signal);
      if (res.status === 404 || res.status === 410) return { kind: 'gone', status: res.status };
      return { kind: 'found', body: res.body, status: res.status };
    },
    async listResources(type, page = {}, callOptions = {}) {
      const take = page.take ?? DEFAULT_PAGE_SIZE;
      if (!(Number.isSafeInteger(take) && take >= 1 && take <= MAX_PAGE_SIZE)) throw new RangeError(`take must be an integer from 1 to ${MAX_PAGE_SIZE}, got ${take}`);
      if (page.skip !== undefined && !(Number.isSafeInteger(page.skip) && page.skip >= 0)) throw new RangeError(`skip must be a non-negative integer, got ${page.skip}`);
      if (page.from !== undefined && page.skip !== undefined) throw new RangeError('a page starts either at an id (from) or after skip objects, not both');
      const context = { resourceType: type };
      const start = page.from !== undefined ? `from=${encodeResourceId(page.from, type)}` : `skip=${page.skip ?? 0}`;
      const path = `${collectionPath(api.pathname, typePath(type))}?${start}&take=${take}`;
      const res = await call(path, 'list', context, callOptions.signal);
      if (res.status === 404 || res.status === 410) throw new ApiRejectedError(`no list endpoint for ${type} (HTTP ${res.status}); check its BILLING_PATH_* setting`, { context: { ...context, status: res.status } });
      const items = parseList(res.body, context);
      return { items, take, last: items.length < take };
    },
    setRequestShare: (share) => budget.setShare(share),
    close: () => agent.close(),
  };
}

function parseList(body: string, context: ErrorContext): string[] {
  try {
    return splitJsonArray(body);
  } catch (err) {
    // A 2xx that is not an array is an upstream fault; the backfill pauses and tries the page again.
    throw new ApiUnavailableError('the list endpoint answered 2xx without a JSON array', { cause: err, context });
  }
}

/** What the caller sees once attempts are over: never the internal TransientApiError. */
function asCallerError(err: unknown, context: ErrorContext): unknown {
  const last = err instanceof RetriesExhaustedError ? err.cause : err;
  if (!(last instanceof TransientApiError)) return err;
  const attempts = err instanceof RetriesExhaustedError ? ` after ${err.attempts} attempts` : '';
  return new ApiUnavailableError(`billing API unavailable${attempts}: ${last.message}`, { cause: last, context: { ...context, ...last.context }, retryAfterMs: last.reason === 'rate-limited' ? last.retryAfterMs : undefined });
}

function cap(ms: number | undefined, max: number): number | undefined {
  return ms === undefined ? undefined : Math.min(ms, max);
}
