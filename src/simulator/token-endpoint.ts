import express, { type Request, type Response, type Router } from 'express';
import type { TokenIssuer } from './token-issuer.js';

export interface Credentials {
  clientId: string;
  clientSecret: string;
  /** Users of the resource owner password grant (spec 4.1): e-mail address and password. */
  users: ReadonlyArray<{ username: string; password: string }>;
}

/**
 * `POST /oauth/token/` (spec 4.1). The spec shows neither the response nor the errors (4.1.3,
 * 5.13); the simulator answers as RFC 6749 does: section 5.1 for success (`access_token`,
 * `token_type: "bearer"`, `expires_in` only when tokens expire), section 5.2 for errors.
 */
export function tokenRouter(issuer: TokenIssuer, credentials: Credentials): Router {
  const router = express.Router();
  router.post('/oauth/token', express.urlencoded({ extended: false, limit: '16kb' }), (req, res) => {
    issuer.requests++;
    if (!req.is('application/x-www-form-urlencoded')) return oauthError(res, 400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
    const form = (req.body ?? {}) as Record<string, unknown>;
    const grantType = form.grant_type;
    if (typeof grantType !== 'string' || grantType === '') return oauthError(res, 400, 'invalid_request', 'grant_type is required');
    if (grantType === 'client_credentials') return clientCredentials(req, res, form, issuer, credentials);
    if (grantType === 'password') return passwordGrant(res, form, issuer, credentials);
    return oauthError(res, 400, 'unsupported_grant_type', `grant_type ${JSON.stringify(grantType)} is not supported`);
  });
  router.all('/oauth/token', (_req, res) => {
    res.set('Allow', 'POST').status(405).json({ error: 'invalid_request', error_description: 'use POST' });
  });
  return router;
}

function clientCredentials(req: Request, res: Response, form: Record<string, unknown>, issuer: TokenIssuer, credentials: Credentials): void {
  // Spec 4.1: with this grant the client authenticates with Basic credentials only.
  if ('client_id' in form || 'client_secret' in form) return oauthError(res, 400, 'invalid_request', 'client credentials belong in the Authorization header, not the body');
  const basic = parseBasic(req.get('authorization'));
  if (!basic) return oauthError(res, 401, 'invalid_client', 'HTTP Basic client authentication required');
  if (basic.id !== credentials.clientId || basic.secret !== credentials.clientSecret) return oauthError(res, 401, 'invalid_client', 'client authentication failed');
  grant(res, issuer);
}

function passwordGrant(res: Response, form: Record<string, unknown>, issuer: TokenIssuer, credentials: Credentials): void {
  for (const field of ['username', 'password', 'client_id'] as const) {
    if (typeof form[field] !== 'string' || form[field] === '') return oauthError(res, 400, 'invalid_request', `${field} is required`);
  }
  if (form.client_id !== credentials.clientId) return oauthError(res, 401, 'invalid_client', 'unknown client_id');
  const ok = credentials.users.some((u) => u.username === form.username && u.password === form.password);
  if (!ok) return oauthError(res, 400, 'invalid_grant', 'wrong username or password');
  grant(res, issuer);
}

function grant(res: Response, issuer: TokenIssuer): void {
  const token = issuer.issue();
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  res.status(200).json({ access_token: token.accessToken, token_type: 'bearer', ...(token.expiresIn === undefined ? {} : { expires_in: token.expiresIn }) });
}

function oauthError(res: Response, status: 400 | 401, error: string, description: string): void {
  // RFC 6749 5.2: a 401 for a failed client authentication names the scheme the client should use.
  if (status === 401) res.set('WWW-Authenticate', 'Basic realm="billing sandbox", charset="UTF-8"');
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  res.status(status).json({ error, error_description: description });
}

function parseBasic(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  // RFC 6749 2.3.1: both parts are form-urlencoded before Base64; plain values decode to themselves.
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
  }
}
