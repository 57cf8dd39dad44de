import { classifyHttpStatus } from '../errors.js';
import type { Logger } from '../log.js';
import { ApiAuthError, TransientApiError } from './api-errors.js';
import type { BillingApiMetrics } from './api-metrics.js';
import type { SendHttp } from './http-exchange.js';
import { parseRetryAfterMs } from './retry-after.js';

/** The OAuth 2.0 grant of spec 4.1, as `requireBillingApi(config).grant` gives it. */
export type BillingGrant = { kind: 'client_credentials'; clientSecret: string } | { kind: 'password'; username: string; password: string };

export interface TokenProviderOptions {
  /** The service's `{auth_url}`; the token endpoint is `{auth_url}/oauth/token/` (spec 5.9). */
  authUrl: string;
  clientId: string;
  grant: BillingGrant;
  send: SendHttp;
  metrics: BillingApiMetrics;
  logger: Logger;
  /** Wall clock in milliseconds, for `expires_in`. Default `Date.now`. */
  now?: () => number;
}

/**
 * One access token for the whole process (spec 5.5: never a token per request). Requested on
 * first use, renewed only when the service refuses it (401) or when it is about to expire, and
 * with one request in flight however many callers need a token at once (single flight).
 */
export interface TokenProvider {
  /** The cached token, or a new one when there is none or it expired. */
  get(): Promise<string>;
  /**
   * Called with a token the service answered 401 to: requests a new one, unless another caller
   * already replaced that token, in which case the replacement is returned without a request.
   */
  renew(refused: string): Promise<string>;
}

export interface CachedToken {
  value: string;
  /** When to stop using it, in wall-clock milliseconds; undefined: no stated expiry (spec 5.4). */
  renewAt: number | undefined;
}

export function createTokenProvider(options: TokenProviderOptions): TokenProvider {
  const now = options.now ?? Date.now;
  const auth = new URL(options.authUrl);
  const path = `${auth.pathname.replace(/\/+$/, '')}/oauth/token/`;
  let current: CachedToken | undefined;
  let inFlight: Promise<CachedToken> | undefined;
  let obtained = 0;

  const fresh = (t: CachedToken | undefined): t is CachedToken => t !== undefined && (t.renewAt === undefined || now() < t.renewAt);

  const fetchOnce = (reason: 'first' | '401' | 'expiry'): Promise<CachedToken> => {
    inFlight ??= requestToken(options, auth.origin, path, now)
      .then((token) => {
        if (obtained++ > 0) options.metrics.tokenRenewals.inc({ reason });
        options.logger.info('billing API token obtained', { grant: options.grant.kind, reason, expiresInMs: token.renewAt === undefined ? undefined : token.renewAt - now() });
        current = token;
        return token;
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };

  return {
    async get() {
      if (fresh(current)) return current.value;
      return (await fetchOnce(current ? 'expiry' : 'first')).value;
    },
    async renew(refused) {
      if (fresh(current) && current.value !== refused) return current.value;
      if (current?.value === refused) current = undefined;
      return (await fetchOnce('401')).value;
    },
  };
}

async function requestToken(options: TokenProviderOptions, origin: string, path: string, now: () => number): Promise<CachedToken> {
  const res = await options.send({ origin, path, method: 'POST', endpoint: 'token', resourceType: '', ...tokenRequest(options.clientId, options.grant) });
  switch (classifyHttpStatus(res.status)) {
    case 'ok':
      return parseTokenResponse(res.body, now());
    case 'rate-limited':
      throw new TransientApiError('token endpoint rate-limited (HTTP 429)', { reason: 'rate-limited', retryAfterMs: parseRetryAfterMs(res.headers['retry-after']), context: { status: 429 } });
    case 'retry':
      throw new TransientApiError(`token endpoint failed (HTTP ${res.status})`, { reason: 'server-error', retryAfterMs: parseRetryAfterMs(res.headers['retry-after']), context: { status: res.status } });
    default:
      if (res.redirectRefused) throw new ApiAuthError(`the token endpoint answered a redirect the loader does not follow (${res.redirectRefused}); check BILLING_AUTH_URL`, { context: { status: res.status } });
      // 400/401 invalid_client or invalid_grant, 403, and a 404/405 from a wrong BILLING_AUTH_URL:
      // retrying cannot fix any of them. The OAuth error code is safe to show; the body is not
      // (an error_description may echo what was sent).
      throw new ApiAuthError(`the token endpoint refused the ${options.grant.kind} grant (HTTP ${res.status}${oauthErrorCode(res.body)}); check BILLING_AUTH_URL and the credentials`, { context: { status: res.status } });
  }
}

/** Spec 4.1: Basic credentials and only grant_type in the body, or the password grant's form. */
function tokenRequest(clientId: string, grant: BillingGrant): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (grant.kind === 'client_credentials') {
    // Spec 4.1.1: Base64 of client_id, a colon and client_secret, as they are (no form-encoding first).
    headers.authorization = `Basic ${Buffer.from(`${clientId}:${grant.clientSecret}`, 'utf8').toString('base64')}`;
    return { headers, body: new URLSearchParams({ grant_type: 'client_credentials' }).toString() };
  }
  return { headers, body: new URLSearchParams({ grant_type: 'password', username: grant.username, password: grant.password, client_id: clientId }).toString() };
}

/**
 * Spec 4.1.3 shows no response payload; this reads RFC 6749 5.1: `access_token`, `token_type`
 * (bearer, when present) and an optional `expires_in` in seconds, in any letter case (spec 9.3). A token with an expiry is
 * renewed a little early (a tenth of its life, at most a minute), so no request carries a token
 * that expires on the way.
 */
export function parseTokenResponse(body: string, nowMs: number): CachedToken {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw malformed('not JSON');
  }
  const t = json !== null && typeof json === 'object' && !Array.isArray(json) ? byLowerCaseName(json as Record<string, unknown>) : null;
  if (typeof t?.access_token !== 'string' || t.access_token === '' || /[\s]/.test(t.access_token)) throw malformed('no usable access_token');
  if (t.token_type !== undefined && (typeof t.token_type !== 'string' || t.token_type.toLowerCase() !== 'bearer')) throw malformed('token_type is not bearer');
  const expiresIn = typeof t.expires_in === 'string' && /^\d+$/.test(t.expires_in) ? Number(t.expires_in) : t.expires_in;
  if (expiresIn === undefined || expiresIn === null) return { value: t.access_token, renewAt: undefined };
  if (typeof expiresIn !== 'number' || !(expiresIn >= 0)) throw malformed('expires_in is not a number of seconds');
  const lifetimeMs = expiresIn * 1000;
  return { value: t.access_token, renewAt: nowMs + lifetimeMs - Math.min(60_000, lifetimeMs / 10) };
}

/**
 * The response's properties by lower-case name (spec 9.3: the letter case of property names may
 * change without notice). Of two variants of one name, the first wins.
 */
function byLowerCaseName(json: Record<string, unknown>): { access_token?: unknown; token_type?: unknown; expires_in?: unknown } {
  // No prototype: a property named "__proto__" stays a property.
  const out = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of Object.entries(json)) {
    const lower = name.toLowerCase();
    if (!Object.hasOwn(out, lower)) out[lower] = value;
  }
  return out;
}

function malformed(what: string): TransientApiError {
  return new TransientApiError(`token endpoint answered 2xx with a malformed body: ${what}`, { reason: 'malformed' });
}

function oauthErrorCode(body: string): string {
  try {
    const code = (JSON.parse(body) as { error?: unknown }).error;
    return typeof code === 'string' && /^[a-z_]{1,64}$/.test(code) ? `, ${code}` : '';
  } catch {
    return '';
  }
}
