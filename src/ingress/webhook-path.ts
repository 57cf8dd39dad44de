/**
 * Whether a request is a webhook the fast path takes (see ingress.ts): `POST /webhooks` when no
 * token is configured, `POST /webhooks/<segment>` when one is, with any query string. Returns the
 * path segment to compare with the token (undefined without a token), or null for anything else,
 * which Express answers: the ops routes, the 404s, and the spellings Express also matches for the
 * webhook route (a trailing slash, another letter case, a percent-encoded segment).
 */
export function webhookPathToken(method: string | undefined, url: string | undefined, tokenConfigured: boolean): { token: string | undefined } | null {
  if (method !== 'POST' || url === undefined) return null;
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (!tokenConfigured) return path === '/webhooks' ? { token: undefined } : null;
  if (!path.startsWith('/webhooks/')) return null;
  const segment = path.slice('/webhooks/'.length);
  return segment === '' || segment.includes('/') || segment.includes('%') ? null : { token: segment };
}
