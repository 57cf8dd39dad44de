import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';
import { topicNames } from '../../src/wire/topics.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { freePort } from '../helpers/free-port.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * How the built ingress stops for a rollout: INGRESS_SHUTDOWN_DELAY_MS keeps webhooks coming in
 * while /readyz already answers 503 (so the load balancer drains it first), and
 * SHUTDOWN_TIMEOUT_MS bounds the whole stop.
 */
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

interface Started {
  child: ChildProcess;
  base: string;
  prefix: string;
  stderr(): string;
  exited: Promise<number | null>;
}

async function startIngress(env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const prefix = `test_${uniqueSuffix()}`;
  let stderr = '';
  const child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'ingress'], {
    cwd: packageRoot,
    env: { ...process.env, ...inject('services'), TOPIC_PREFIX: prefix, INGRESS_PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, { what: 'ingress ready', timeoutMs: 60_000, intervalMs: 200 });
  return { child, base, prefix, stderr: () => stderr, exited };
}

async function webhookCount(prefix: string): Promise<number> {
  const admin = createKafka({ brokers: inject('services').KAFKA_BROKERS.split(','), clientId: 'shutdown-cli-test', log: silentLogger }).admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topicNames(prefix).webhooks);
    return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  } finally {
    await admin.disconnect();
  }
}

const post = (base: string, id: string) => fetch(`${base}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ Event: 'ContractChanged', ContractId: id }) });

describe('ingress shutdown for rollouts', () => {
  it('during INGRESS_SHUTDOWN_DELAY_MS after SIGTERM, answers /readyz 503 but still takes webhooks into Kafka', async () => {
    // A delay far longer than the test: the window cannot close under it on a slow machine.
    const s = await startIngress({ INGRESS_SHUTDOWN_DELAY_MS: '600000', SHUTDOWN_TIMEOUT_MS: '900000' });
    s.child.kill('SIGTERM');
    await waitFor(async () => (await fetch(`${s.base}/readyz`)).status === 503, { what: '/readyz 503 after SIGTERM' });
    const res = await post(s.base, 'during-delay');
    expect(res.status).toBe(200);
    expect(await webhookCount(s.prefix)).toBe(1);
    expect(s.stderr()).toContain('ingress shutdown delay');
    // A second signal still ends it at once, without waiting for the delay.
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(130);
    expect(s.stderr()).toContain('"msg":"second signal, exiting without waiting"');
    expect(s.stderr()).not.toContain('"msg":"stopped"');
  });

  it('after the delay drains and exits 0', async () => {
    const s = await startIngress({ INGRESS_SHUTDOWN_DELAY_MS: '200', SHUTDOWN_TIMEOUT_MS: '15000' });
    expect((await post(s.base, 'before-stop')).status).toBe(200);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    const lines = s.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string });
    const order = lines.map((l) => l.msg).filter((m) => /^(shutting down|ingress shutdown delay|ingress stopping|stopped)/.test(m));
    expect(order).toEqual(['shutting down', 'ingress shutdown delay: /readyz answers 503, webhooks still accepted', 'ingress stopping: new webhooks get 503, finishing the ones in flight', 'stopped']);
    expect(await webhookCount(s.prefix)).toBe(1);
    // Only JSON lines, each naming the service and the build.
    const all = s.stderr().split('\n').filter((l) => l.trim() !== '');
    for (const line of all) expect(JSON.parse(line), line).toMatchObject({ service: 'ingress', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  it('exits 1 when the drain outlasts SHUTDOWN_TIMEOUT_MS (a webhook whose body never finishes)', async () => {
    const s = await startIngress({ SHUTDOWN_TIMEOUT_MS: '1000', INGRESS_REQUEST_TIMEOUT_MS: '600000' });
    const url = new URL(s.base);
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    socket.write('POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"Event":');
    await waitFor(async () => /billing_loader_ingress_in_flight_requests 1\b/.test(await (await fetch(`${s.base}/metrics`)).text()), { what: 'the webhook in flight' });
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(1);
    socket.destroy();
    const lines = s.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; timeoutMs?: number });
    expect(lines.find((l) => l.msg === 'shutdown timeout exceeded, exiting')).toMatchObject({ timeoutMs: 1000 });
  });
});
