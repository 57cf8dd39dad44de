import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { packageRoot } from '../../src/stack/settings.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { freePort } from '../helpers/free-port.js';

/** The sink run alone serves its ops routes on OPS_PORT when it is set, instead of SINK_PORT. */
const services = inject('services');
const schema = `test_${uniqueSuffix()}`;
const pool = createPool({ databaseUrl: services.DATABASE_URL, applicationName: 'test', log: silentLogger, max: 1 });
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await pool.end();
});

describe('billing-loader sink with OPS_PORT', () => {
  it('serves /healthz, /readyz with reasons and /metrics on OPS_PORT, nothing on SINK_PORT', async () => {
    await migrate(pool, { schema, log: silentLogger });
    const [opsPort, sinkPort] = [await freePort(), await freePort()];
    child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'sink'], {
      cwd: packageRoot,
      env: { ...process.env, ...services, TOPIC_PREFIX: `test_${uniqueSuffix()}`, DATABASE_SCHEMA: schema, OPS_PORT: String(opsPort), SINK_PORT: String(sinkPort), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    const ops = `http://127.0.0.1:${opsPort}`;
    await waitFor(async () => (await fetch(`${ops}/readyz`)).status === 200, { what: 'sink ready on OPS_PORT', timeoutMs: 60_000, intervalMs: 250 });
    expect(await (await fetch(`${ops}/readyz`)).json()).toMatchObject({ ready: true, checks: { 'sink.database': { ok: true } } });
    expect((await fetch(`${ops}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(metrics).toContain('billing_loader_sink_');
    expect(metrics).toMatch(/^billing_loader_build_info\{version="[^"]+",node="v[^"]+"\} 1$/m);
    await expect(fetch(`http://127.0.0.1:${sinkPort}/healthz`)).rejects.toThrow();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // Only JSON lines, each naming the service and the build: a log pipeline parses every one.
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line), line).toMatchObject({ service: 'sink', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  }, 120_000);
});
