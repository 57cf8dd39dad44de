import { spawn, type SpawnOptions } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { UserError } from '../errors.js';

/**
 * Process plumbing for the local stack: detached services with pid files, and the checks that
 * keep `up` idempotent and `down` exact (only a pid whose command line names our state folder
 * is ours; a recycled pid of some other program is never signalled).
 */

export function readPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim().split('\n')[0]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * Whether `pid` is a live process. A zombie (exited, not yet reaped: common for detached
 * services whose reaper is a minimal init) counts as gone, though kill(pid, 0) still succeeds.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S ..."; comm may contain spaces, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (macOS): kill(pid, 0) is the best evidence
  }
}

/** Whether `pid` runs and its command line contains `marker` (our state folder). */
export function isOurs(pid: number | undefined, marker: string): pid is number {
  if (pid === undefined || !isRunning(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
  } catch {
    // No /proc (macOS): a live pid from our own pid file is the best evidence available.
    return true;
  }
}

export interface DetachedOptions {
  cwd: string;
  logFile: string;
  pidFile: string;
  env?: NodeJS.ProcessEnv;
  uid?: number;
  gid?: number;
}

/** Starts a long-lived service that outlives this process; its output goes to `logFile`. */
export async function spawnDetached(command: string, args: string[], options: DetachedOptions): Promise<number> {
  const out = openSync(options.logFile, 'a');
  try {
    const spawnOptions: SpawnOptions = { cwd: options.cwd, detached: true, stdio: ['ignore', out, out], env: options.env ?? process.env };
    if (options.uid !== undefined) spawnOptions.uid = options.uid;
    if (options.gid !== undefined) spawnOptions.gid = options.gid;
    const child = spawn(command, args, spawnOptions);
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('error', (err) => reject(toolError(command, err)));
      child.once('spawn', () => resolve(child.pid as number));
    });
    child.unref();
    writeFileSync(options.pidFile, `${pid}\n`);
    return pid;
  } finally {
    closeSync(out);
  }
}

/** Runs a command to completion; rejects with its output when it fails. */
export function runCommand(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; uid?: number; gid?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', (err) => reject(toolError(command, err)));
    child.once('close', (code) => {
      if (code === 0) resolve(output);
      else reject(new UserError(`${command} ${args.slice(0, 3).join(' ')} failed (exit ${code}):\n${output.trim().split('\n').slice(-15).join('\n')}`));
    });
  });
}

function toolError(command: string, err: Error): Error {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return err;
  const fix: Record<string, string> = {
    java: 'install a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless) or run the stack with `docker compose up`',
    mvn: 'install Apache Maven (Debian: apt-get install maven) or run the stack with `docker compose up`',
    tar: 'install tar',
  };
  return new UserError(`${command} not found: ${fix[command] ?? `install ${command}`}`);
}

/** Sends SIGTERM, waits up to `graceMs`, then SIGKILL. Resolves once the process is gone. */
export async function stopProcess(pid: number, graceMs: number): Promise<void> {
  const alive = () => isRunning(pid);
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (alive() && Date.now() < deadline) await sleep(100);
  if (alive()) {
    process.kill(pid, 'SIGKILL');
    while (alive()) await sleep(50);
  }
}

export function removeFile(path: string): void {
  rmSync(path, { force: true });
}

/** Whether something already listens on 127.0.0.1:`port`. */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(true));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
  });
}

/** Thrown by a `waitUntil` check when waiting longer cannot help (the process being waited for has exited). */
export class WaitAbandoned extends Error {
  override name = 'WaitAbandoned';
}

/**
 * Polls `check` until it resolves or `timeoutMs` passes; then rejects with the last failure.
 * A check that throws WaitAbandoned ends the wait at once with that error.
 */
export async function waitUntil(check: () => Promise<void>, timeoutMs: number, intervalMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      await check();
      return;
    } catch (err) {
      if (err instanceof WaitAbandoned) throw err;
      last = err;
      await sleep(intervalMs);
    }
  }
  throw last ?? new Error('timed out');
}

/** The last `lines` lines of a text file, or '' when it does not exist. */
export function tailOf(file: string, lines: number): string {
  if (!existsSync(file)) return '';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}
