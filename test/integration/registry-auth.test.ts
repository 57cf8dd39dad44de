import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/registry/registry.js';
import { runCommand } from '../../src/stack/processes.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';

/**
 * The registry behind HTTPS (a private CA) and basic auth, as a hosted registry is: an HTTPS
 * front of this file's own, checking the credentials and passing every request on to the test
 * registry. Both of the loader's paths to the registry (the schema client, and its own calls
 * for compatibility and readiness) must carry the CA and the credentials.
 */
const USER = 'loader';
const PASSWORD = 'registry-pass-0123';
let dir: string;
let server: Server;
let frontUrl: string;
let caFile: string;
let authorized = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'registry-auth-'));
  const f = (n: string) => join(dir, n);
  caFile = f('ca.pem');
  writeFileSync(f('ext'), 'subjectAltName=IP:127.0.0.1\n');
  await runCommand('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', caFile, '-days', '1', '-subj', '/CN=test registry CA']);
  await runCommand('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1']);
  await runCommand('openssl', ['x509', '-req', '-in', f('server.csr'), '-CA', caFile, '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.pem'), '-days', '1', '-extfile', f('ext')]);
  const upstream = testConfig().schemaRegistryUrl;
  const expected = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
  server = createServer({ key: readFileSync(f('server.key')), cert: readFileSync(f('server.pem')) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.headers.authorization !== expected) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error_code":401,"message":"Unauthorized"}');
        return;
      }
      authorized++;
      const path = (req.url ?? '/').replace(/^\/registry/, '');
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(`${upstream}${path}`, { method: req.method, headers: { 'content-type': req.headers['content-type'] ?? 'application/json' }, ...(body ? { body } : {}) })
        .then(async (r) => res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer())))
        .catch((err: Error) => res.writeHead(502).end(err.message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  frontUrl = `https://127.0.0.1:${(server.address() as { port: number }).port}/registry`;
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('schema registry over HTTPS with basic auth', () => {
  it('registers, encodes, decodes, sets compatibility and answers readiness with SCHEMA_REGISTRY_CA_FILE and the credentials', async () => {
    const config = testConfig({ SCHEMA_REGISTRY_URL: frontUrl, SCHEMA_REGISTRY_USERNAME: USER, SCHEMA_REGISTRY_PASSWORD: PASSWORD, SCHEMA_REGISTRY_CA_FILE: caFile });
    const registry = createRegistry(config);
    const subject = `registry-auth-${uniqueSuffix()}-value`;
    const before = authorized;
    await registry.ping();
    const id = await registry.register(subject, JSON.stringify({ type: 'record', name: 'T', fields: [{ name: 'a', type: 'string' }] }));
    await registry.setCompatibility(subject, 'FULL');
    expect(await registry.decode(await registry.encode(id, { a: 'x' }))).toEqual({ a: 'x' });
    expect(authorized - before).toBeGreaterThanOrEqual(3);
  });

  it('without the credentials the registry refuses, and without the CA the connection does', async () => {
    const noAuth = createRegistry(testConfig({ SCHEMA_REGISTRY_URL: frontUrl, SCHEMA_REGISTRY_CA_FILE: caFile }));
    await expect(noAuth.ping()).rejects.toThrow(/HTTP 401/);
    await expect(noAuth.register(`registry-auth-${uniqueSuffix()}-value`, '"string"')).rejects.toThrow(/registration .* failed/);
    const noCa = createRegistry(testConfig({ SCHEMA_REGISTRY_URL: frontUrl, SCHEMA_REGISTRY_USERNAME: USER, SCHEMA_REGISTRY_PASSWORD: PASSWORD }));
    await expect(noCa.ping()).rejects.toThrow();
  });
});
