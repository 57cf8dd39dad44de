import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createBillingApiClient } from '../../src/billing-api/client.js';
import { createLogger } from '../../src/log.js';
import { json, startRecordingServer } from './billing-api-recording-server.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const SECRET = 'client-secret-Zq81x';
const PASSWORD = 'user-password-Kp77y';
const TOKENS = ['access-token-one-Rr55a', 'access-token-two-Tt66b'];

describe('billing API secrets', () => {
  it.each([
    ['client credentials', { kind: 'client_credentials', clientSecret: SECRET }],
    ['password', { kind: 'password', username: 'u@example.com', password: PASSWORD }],
  ] as const)('never writes the %s secret or a token to the log or into an error', async (_grant, grant) => {
    let tokens = 0;
    let resource = 0;
    const server = await startRecordingServer((req, res) => {
      if (req.url.startsWith('/oauth/')) return json(res, 200, { access_token: TOKENS[tokens++ % 2], token_type: 'bearer' });
      // A 401 (renewal), a 503 and a 429 (retries), a success, then a 403 that fails the call.
      const script = [401, 503, 429, 200, 403];
      const status = script[resource++] ?? 403;
      json(res, status, status === 200 ? { Id: 'c1' } : { Message: 'no' }, status === 429 ? { 'retry-after': '0' } : {});
    });
    const out = new PassThrough();
    let logged = '';
    out.on('data', (chunk: Buffer) => (logged += chunk.toString('utf8')));
    const api = createBillingApiClient({ apiUrl: server.url, authUrl: server.url, clientId: 'id', grant, logger: createLogger('debug', out), minBackoffMs: 1, maxBackoffMs: 2 });
    cleanup.push(() => server.close(), () => api.close());

    expect((await api.getResource('Contract', 'c1')).kind).toBe('found');
    const err = await api.getResource('Contract', 'c1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);

    expect(logged).toMatch(/billing API token obtained/);
    expect(logged).toMatch(/retrying/);
    const errorText = `${String(err)} ${JSON.stringify(err)} ${String((err as Error).stack)}`;
    for (const secret of [SECRET, PASSWORD, ...TOKENS, Buffer.from(`id:${SECRET}`).toString('base64')]) {
      expect(logged).not.toContain(secret);
      expect(errorText).not.toContain(secret);
    }
  });
});
