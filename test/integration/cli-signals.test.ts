import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { packageRoot } from '../../src/stack/settings.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { freePort } from '../helpers/free-port.js';

/**
 * The documented ways of starting a component (docs/OPERATIONS.md) must deliver a supervisor's
 * SIGTERM to the loader's own process, which then drains and exits 0: no loader left running
 * without a supervisor, no loader killed without draining.
 */
const started: ChildProcess[] = [];
const loaderPids: number[] = [];
afterAll(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const pid of loaderPids) if (alive(pid)) process.kill(pid, 'SIGKILL');
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Started {
  child: ChildProcess;
  port: number;
  stderr: () => string;
  /** Resolves once every process holding the output pipes has exited. */
  closed: Promise<number | null>;
  /** The pid the loader logs (its own process). */
  loaderPid: () => number;
}

async function start(command: string, args: string[]): Promise<Started> {
  const port = await freePort();
  let stderr = '';
  const child = spawn(command, args, {
    cwd: packageRoot,
    env: { ...process.env, ...inject('services'), TOPIC_PREFIX: `test_${uniqueSuffix()}`, INGRESS_PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout?.resume();
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, { what: 'ingress ready', timeoutMs: 90_000, intervalMs: 250 });
  const loaderPid = () => {
    const match = /"pid":(\d+),[^\n]*"component":"ingress"[^\n]*"msg":"ingress listening"/.exec(stderr);
    if (!match) throw new Error(`no "ingress listening" line in the log:\n${stderr}`);
    return Number(match[1]);
  };
  loaderPids.push(loaderPid());
  return { child, port, stderr: () => stderr, closed, loaderPid };
}

describe('signals through the documented command lines', () => {
  it('`sh -c "exec node bin/billing-loader.js ingress"` (docker compose, scripts): the SIGTERM reaches the loader, which drains and exits 0', async () => {
    const s = await start('sh', ['-c', 'exec node bin/billing-loader.js ingress']);
    // exec: the process the supervisor knows is the loader itself.
    expect(s.loaderPid()).toBe(s.child.pid);
    s.child.kill('SIGTERM');
    expect(await s.closed).toBe(0);
    expect(s.stderr()).toMatch(/"signal":"SIGTERM"[^\n]*"msg":"shutting down"/);
    expect(s.stderr()).toContain('"msg":"stopped"');
  }, 120_000);

  it('`npx billing-loader ingress`: a SIGTERM to npx stops the loader under it, drained, with nothing left running', async () => {
    const s = await start('npx', ['billing-loader', 'ingress']);
    const loader = s.loaderPid();
    expect(loader).not.toBe(s.child.pid); // npm, then a shell, then the loader
    s.child.kill('SIGTERM');
    // The pipes close only when the last process writing to them, the loader, has exited.
    await waitFor(() => !alive(loader), { what: 'the loader under npx exited', timeoutMs: 45_000, intervalMs: 100 });
    await s.closed;
    // npm passed the SIGTERM to its shell, which died of it; the loader saw its parent go.
    expect(s.stderr()).toMatch(/"signal":"parent-exited"[^\n]*"msg":"shutting down"/);
    expect(s.stderr()).toContain('"msg":"stopped"');
    expect(s.stderr()).not.toContain('shutdown timeout exceeded');
  }, 120_000);
});
