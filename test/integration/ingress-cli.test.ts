import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { packageRoot } from '../../src/package-root.js';
import { runCli } from '../helpers/cli.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { freePort } from '../helpers/free-port.js';

/** The built executable (dist/, built by `npm test`'s bootstrap), run as an operator would. */
let child: ChildProcess | undefined;
afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

describe('billing-loader ingress', () => {
  it('lists its environment variables in --help', async () => {
    const { code, stdout } = await runCli(['ingress', '--help']);
    expect(code).toBe(0);
    for (const variable of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'TOPIC_PREFIX', 'INGRESS_PORT', 'INGRESS_TOKEN', 'INGRESS_MAX_BODY_BYTES', 'LOG_LEVEL']) expect(stdout).toContain(variable);
  });

  it('exits 2 with one line naming INGRESS_PORT when the port is taken', async () => {
    const port = await freePort();
    const blocker = createServer().listen(port, '0.0.0.0');
    await once(blocker, 'listening');
    try {
      const { code, stderr } = await runCli(['ingress'], { ...inject('services'), TOPIC_PREFIX: `test_${uniqueSuffix()}`, INGRESS_PORT: String(port), LOG_LEVEL: 'error' });
      expect(code).toBe(2);
      expect(stderr.trim().split('\n').filter((line) => line.startsWith('billing-loader:'))).toEqual([expect.stringMatching(/^billing-loader: INGRESS_PORT: cannot listen on .*EADDRINUSE/)]);
    } finally {
      blocker.close();
    }
  });

  it('serves webhooks, keeps the body, token and headers out of its logs, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const token = `tok-${uniqueSuffix()}-${uniqueSuffix()}-secret`;
    const marker = `body-marker-${uniqueSuffix()}`;
    const headerValue = `header-marker-${uniqueSuffix()}`;
    let stderr = '';
    child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'ingress'], {
      cwd: packageRoot,
      env: { ...process.env, ...inject('services'), TOPIC_PREFIX: `test_${uniqueSuffix()}`, INGRESS_PORT: String(port), INGRESS_TOKEN: token, LOG_LEVEL: 'debug' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, { what: 'ingress ready', timeoutMs: 60_000, intervalMs: 200 });

    const post = (path: string, body: object) => fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-trace': headerValue, authorization: `Bearer ${headerValue}` }, body: JSON.stringify(body) });
    const accepted = await post(`/webhooks/${token}`, { Event: 'ContractChanged', ContractId: 'c-cli', Note: marker });
    expect(accepted.status).toBe(200);
    const rejected = await post(`/webhooks/${token}`, { Event: 'ContractChanged', ContractId: 42, Note: marker });
    expect(rejected.status).toBe(400);
    expect((await post(`/webhooks/${token}x`, { Event: 'ContractChanged', Note: marker })).status).toBe(404);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/billing_loader_ingress_requests_total\{status="200"\} 1/);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // The logs name the event and its identifiers (debug shows them), never the secret parts.
    expect(stderr).toContain('c-cli');
    expect(stderr).toContain('webhook accepted');
    expect(stderr).not.toContain(token);
    expect(stderr).not.toContain(marker);
    expect(stderr).not.toContain(headerValue);
  });
});
