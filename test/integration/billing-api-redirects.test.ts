import { afterEach, describe, expect, it } from 'vitest';
import { ApiAuthError } from '../../src/billing-api/api-errors.js';
import { createBillingApiClient, type BillingApiClient } from '../../src/billing-api/client.js';
import { json, startRecordingServer, tokenThen, type Handler, type RecordingServer } from './billing-api-recording-server.js';

/**
 * Odd but legal answers of the billing API, from real HTTP servers: redirects (followed within
 * 3 hops, the token kept only for the same origin) and a token response whose property names
 * arrive in another letter case (spec 9.3).
 */
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function server(handler: Handler): Promise<RecordingServer> {
  const s = await startRecordingServer(handler);
  cleanup.push(() => s.close());
  return s;
}

function client(url: string, authUrl = url): BillingApiClient {
  const api = createBillingApiClient({ apiUrl: url, authUrl, clientId: 'id', grant: { kind: 'client_credentials', clientSecret: 'secret' }, requestsPerSecond: 10_000, minBackoffMs: 5, maxBackoffMs: 20 });
  cleanup.push(() => api.close());
  return api;
}

const redirect = (status: number, location: string): Handler => (_req, res) => void res.writeHead(status, { location }).end();
const resourceRequests = (s: RecordingServer) => s.requests.filter((r) => r.url.startsWith('/api/') || r.url.startsWith('/moved/'));

describe('billing API redirects', () => {
  it.each([301, 302, 303, 307, 308])('follows a %i to the same origin, with the token', async (status) => {
    const api = await server(
      tokenThen('tok', (req, res) => {
        if (req.url.startsWith('/api/')) return redirect(status, `/moved${req.url}`)(req, res);
        json(res, 200, { Id: 'c1', at: req.url });
      }),
    );
    expect(await client(api.url).getResource('Contract', 'c1')).toEqual({ kind: 'found', status: 200, body: '{"Id":"c1","at":"/moved/api/v1/Contracts/c1"}' });
    const [first, second] = resourceRequests(api);
    expect(first?.headers.authorization).toBe('Bearer tok');
    expect(second).toMatchObject({ method: 'GET', url: '/moved/api/v1/Contracts/c1' });
    expect(second?.headers.authorization).toBe('Bearer tok');
  });

  it('follows a redirect to another origin without the token', async () => {
    const other = await server((_req, res) => json(res, 200, { Id: 'c1' }));
    const api = await server(tokenThen('tok', redirect(302, `${other.url}/elsewhere/c1`)));
    expect(await client(api.url).getResource('Contract', 'c1')).toMatchObject({ kind: 'found', body: '{"Id":"c1"}' });
    expect(other.requests).toHaveLength(1);
    expect(other.requests[0]?.url).toBe('/elsewhere/c1');
    expect(other.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('follows at most 3 hops, then stops with a configuration error (no DLQ, no retry)', async () => {
    let hops = 0;
    const api = await server(tokenThen('tok', (_req, res) => redirect(307, `/api/v1/Contracts/loop-${++hops}`)(_req, res)));
    const err = await client(api.url).getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiAuthError);
    expect((err as Error).message).toMatch(/redirect/i);
    expect((err as Error).message).toMatch(/BILLING_API_URL/);
    expect(resourceRequests(api)).toHaveLength(4);
  });

  it('does not follow a redirect without a Location', async () => {
    const api = await server(tokenThen('tok', (_req, res) => void res.writeHead(301).end()));
    await expect(client(api.url).getResource('Contract', 'c1')).rejects.toBeInstanceOf(ApiAuthError);
    expect(resourceRequests(api)).toHaveLength(1);
  });

  it('follows a 308 of the token endpoint on the same origin, keeping the POST, its body and credentials', async () => {
    const api = await server((req, res) => {
      if (req.url === '/oauth/token/') return redirect(308, '/auth2/oauth/token/')(req, res);
      if (req.url === '/auth2/oauth/token/') return json(res, 200, { access_token: 'moved-tok', token_type: 'bearer' });
      json(res, 200, { Id: 'c1', auth: req.headers.authorization });
    });
    expect(await client(api.url).getResource('Contract', 'c1')).toMatchObject({ body: '{"Id":"c1","auth":"Bearer moved-tok"}' });
    const moved = api.requests.find((r) => r.url === '/auth2/oauth/token/');
    expect(moved).toMatchObject({ method: 'POST', body: 'grant_type=client_credentials' });
    expect(moved?.headers.authorization).toBe(`Basic ${Buffer.from('id:secret').toString('base64')}`);
  });

  it('does not send the credentials of a token request to another origin', async () => {
    const other = await server((_req, res) => json(res, 200, { access_token: 'stolen', token_type: 'bearer' }));
    const api = await server((req, res) => (req.url.startsWith('/oauth/') ? redirect(307, `${other.url}/oauth/token/`)(req, res) : json(res, 200, {})));
    await expect(client(api.url).getResource('Contract', 'c1')).rejects.toBeInstanceOf(ApiAuthError);
    expect(other.requests).toHaveLength(0);
  });
});

describe('billing API token response, any letter case (spec 9.3)', () => {
  it.each([
    { Access_Token: 'tok-1', Token_Type: 'Bearer', Expires_In: 3600 },
    { ACCESS_TOKEN: 'tok-1', TOKEN_TYPE: 'BEARER', EXPIRES_IN: '3600' },
    { accesstoken: 'wrong', access_token: 'tok-1' },
  ])('reads %j', async (answer) => {
    const api = await server((req, res) => (req.url.startsWith('/oauth/') ? json(res, 200, answer) : json(res, 200, { auth: req.headers.authorization })));
    expect(await client(api.url).getResource('Contract', 'c1')).toMatchObject({ body: '{"auth":"Bearer tok-1"}' });
  });
});
