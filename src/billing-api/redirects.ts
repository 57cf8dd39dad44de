import type { HttpRequest, HttpResponse, SendHttp } from './http-exchange.js';

/** Redirects followed per request, the first answer not counted. */
export const MAX_REDIRECTS = 3;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** The request to send for a redirect, or why it is not followed. */
export type NextHop = { follow: HttpRequest } | { refuse: string };

/**
 * The next request after a redirect answer to `current` (`original` is the request the caller
 * made), as HTTP clients do, with the loader's limits:
 * - the Authorization header goes only to the original origin (another host must not get the token);
 * - a request with a body (the token request: its body can hold the password) is not sent to
 *   another origin at all;
 * - never from https to http, so a token or credentials never travel unencrypted;
 * - 303 turns the request into a GET without a body; 301, 302, 307 and 308 keep the method and
 *   body (the token request stays a POST: changing it to a GET would only fail).
 */
export function nextHop(original: HttpRequest, current: HttpRequest, status: number, location: string | string[] | undefined): NextHop {
  if (typeof location !== 'string' || location === '') return { refuse: `HTTP ${status} without a Location` };
  let target: URL;
  try {
    target = new URL(location, `${current.origin}${current.path}`);
  } catch {
    return { refuse: `HTTP ${status} to an unusable Location` };
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') return { refuse: `HTTP ${status} to a ${target.protocol} address` };
  if (new URL(original.origin).protocol === 'https:' && target.protocol === 'http:') return { refuse: `HTTP ${status} from https to http` };
  const sameOrigin = target.origin === original.origin;
  const method = status === 303 ? 'GET' : current.method;
  const body = status === 303 ? undefined : current.body;
  if (!sameOrigin && body !== undefined) return { refuse: `HTTP ${status} of a request carrying credentials to another origin (${target.origin})` };
  const headers = { ...current.headers };
  if (!sameOrigin) delete headers.authorization;
  if (body === undefined) delete headers['content-type'];
  return { follow: { ...current, origin: target.origin, path: `${target.pathname}${target.search}`, method, headers, body } };
}

/**
 * Follows redirects within MAX_REDIRECTS hops, each hop a request of its own (budget, time limit,
 * metrics). A redirect it does not follow is returned as the 3xx answer with `redirectRefused`.
 */
export function followRedirects(send: SendHttp): SendHttp {
  return async (original) => {
    let request = original;
    for (let hops = 0; ; hops++) {
      const res = await send(request);
      if (!REDIRECT_STATUSES.has(res.status)) return res;
      if (hops === MAX_REDIRECTS) return refused(res, `more than ${MAX_REDIRECTS} redirects`);
      const next = nextHop(original, request, res.status, res.headers.location);
      if ('refuse' in next) return refused(res, next.refuse);
      request = next.follow;
    }
  };
}

function refused(res: HttpResponse, why: string): HttpResponse {
  return { ...res, redirectRefused: why };
}
