import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isRunning, portInUse } from '../../src/stack/processes.js';
import { stackStatus, stackUp } from '../../src/stack/stack.js';
import { runCli } from '../helpers/cli.js';

// A second, private stack: its own folder and ports, so `down` can be tested without touching
// the stack the other test files use. Downloads come from the local Maven cache after the first.
// mkdtemp makes 0700 folders; PostgreSQL runs as 'nobody' when tests run as root and must enter it.
const privateDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(d, 0o755);
  return d;
};
const dir = privateDir('billing-loader-stack-test-');
const env = { STACK_DIR: dir };
const ports = ['--kafka-port', '29092', '--kafka-controller-port', '29093', '--registry-port', '28081', '--postgres-port', '25432'];

const pids = () => ({
  kafka: readFileSync(join(dir, 'kafka', 'kafka.pid'), 'utf8').trim(),
  registry: readFileSync(join(dir, 'registry', 'registry.pid'), 'utf8').trim(),
  postgres: readFileSync(join(dir, 'postgres', 'data', 'postmaster.pid'), 'utf8').split('\n')[0],
});

const alive = (pid: string | undefined) => isRunning(Number(pid));

afterAll(async () => {
  await runCli(['stack', 'down'], env);
  rmSync(dir, { recursive: true, force: true });
});

describe('billing-loader stack', () => {
  it('up starts all three services and prints the connection settings; a second up starts nothing new', { timeout: 300_000 }, async () => {
    const first = await runCli(['stack', 'up', ...ports], env);
    expect(first.stderr).not.toMatch(/billing-loader:/);
    expect(first.code).toBe(0);
    expect(first.stdout.trim().split('\n')).toEqual([
      'KAFKA_BROKERS=127.0.0.1:29092',
      'SCHEMA_REGISTRY_URL=http://127.0.0.1:28081/apis/ccompat/v7',
      'DATABASE_URL=postgres://postgres@127.0.0.1:25432/postgres',
    ]);
    const before = pids();

    // Ports are remembered: the second up needs no flags.
    const second = await runCli(['stack', 'up'], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    expect(second.stderr).toMatch(/kafka: already running/);
    expect(pids()).toEqual(before);

    const status = await runCli(['stack', 'status'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/postgres\s+running\s+port 25432/);
    // The newest line is the default.
    expect(status.stdout).toMatch(/kafka\s+running\s+port 29092\s+pid \d+\s+Kafka 4\.4\.0/);
    expect(status.stdout).toMatch(/schema-registry\s+running\s+port 28081/);

    const down = await runCli(['stack', 'down'], env);
    expect(down.code).toBe(0);
    for (const pid of Object.values(before)) expect(alive(pid)).toBe(false);
    const after = await runCli(['stack', 'status'], env);
    expect(after.code).toBe(3);
    expect(after.stdout.match(/stopped/g)).toHaveLength(3);
  });

  it('runs the Kafka line asked for, remembers it, and will not switch lines under a running broker', { timeout: 300_000 }, async () => {
    const up = await runCli(['stack', 'up', '--kafka-version', '3.9'], env);
    expect(up.stderr).not.toMatch(/billing-loader:/);
    expect(up.code).toBe(0);
    expect((await runCli(['stack', 'status'], env)).stdout).toMatch(/kafka\s+running\s+port 29092\s+pid \d+\s+Kafka 3\.9\.1/);

    const again = await runCli(['stack', 'up'], env);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/kafka: already running/);

    const other = await runCli(['stack', 'up', '--kafka-version', '4.4'], env);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/^billing-loader: kafka: Kafka 3\.9\.1 is running; run `billing-loader stack down` first to switch to Kafka 4\.4\.0/m);
    expect((await runCli(['stack', 'down'], env)).code).toBe(0);
  });

  it('rejects an unknown Kafka line with exit 2 and one line', async () => {
    const result = await runCli(['stack', 'up', '--kafka-version', '2.8'], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--kafka-version <line>' argument '2.8' is invalid. expected one of 3.9, 4.4/);
  });

  it('refuses a busy port in one line naming the port', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(25433, '127.0.0.1', resolve));
    try {
      const otherDir = privateDir('billing-loader-stack-busy-');
      const result = await runCli(['stack', 'up', '--postgres-port', '25433', '--kafka-port', '29094', '--kafka-controller-port', '29095', '--registry-port', '28082'], { STACK_DIR: otherDir });
      // Refused before anything started: no broker or registry is left running on its port
      // (a test run that meets a busy port must not leave services behind for the next one).
      const leftRunning: number[] = [];
      for (const port of [29094, 28082]) if (await portInUse(port)) leftRunning.push(port);
      await runCli(['stack', 'down'], { STACK_DIR: otherDir });
      rmSync(otherDir, { recursive: true, force: true });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^billing-loader: postgres: port 25433 is already in use by another process; stop it or choose another port/m);
      expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(leftRunning).toEqual([]);
    } finally {
      blocker.close();
    }
  }, 300_000);

  it('stops what it started when a service does not become ready, and says which', async () => {
    const otherDir = privateDir('billing-loader-stack-unready-');
    const o = { dir: otherDir, ports: { postgres: 25434, kafka: 29096, kafkaController: 29097, registry: 28083 }, readyTimeoutMs: 1 };
    try {
      // One millisecond: no service answers that fast, so every one fails its readiness check.
      await expect(stackUp(o)).rejects.toThrow(/^(postgres|kafka|schema-registry) did not become ready: .*; see \S+\.log$/);
      // Nothing this `up` started is left running, by pid file or on its port.
      expect(stackStatus(o).filter((s) => s.state !== 'stopped')).toEqual([]);
      const leftRunning: number[] = [];
      for (const port of [25434, 29096, 28083]) if (await portInUse(port)) leftRunning.push(port);
      expect(leftRunning).toEqual([]);
    } finally {
      await runCli(['stack', 'down'], { STACK_DIR: otherDir });
      rmSync(otherDir, { recursive: true, force: true });
    }
  }, 300_000);

  it('rejects a bad argument with exit 2 and one line', async () => {
    const result = await runCli(['stack', 'up', '--kafka-port', 'abc'], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--kafka-port <port>' argument 'abc' is invalid. expected a port number/);
  });
});
