import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

/** Slow clients must not be able to hold the ingress's connections: time limits and a connection cap. */
const ingresses: TestIngress[] = [];
const sockets: Socket[] = [];
const timers: NodeJS.Timeout[] = [];

afterEach(() => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  for (const socket of sockets.splice(0)) socket.destroy();
});
afterAll(async () => {
  for (const t of ingresses) await t.stop();
});

async function ingress(tuning: Parameters<typeof startTestIngress>[0]): Promise<TestIngress> {
  const t = await startTestIngress(tuning);
  ingresses.push(t);
  return t;
}

/** A slowloris client: a request line, then one header byte every 100 ms, never the blank line. */
async function slowloris(url: string): Promise<{ closed: () => boolean; received: () => string }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  let closed = false;
  let received = '';
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  socket.on('data', (d: Buffer) => (received += d.toString()));
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write('POST /webhooks HTTP/1.1\r\nHost: x\r\nX-Pad: ');
  timers.push(setInterval(() => !closed && socket.write('a'), 100));
  return { closed: () => closed, received: () => received };
}

const webhook = { Event: 'ContractChanged', ContractId: 'c-normal' };

describe('ingress: slow clients', () => {
  it('cuts off clients that send their headers byte by byte, and serves a normal client meanwhile', async () => {
    const t = await ingress({ ingressHeadersTimeoutMs: 1500, ingressRequestTimeoutMs: 3000 });
    const slow = await Promise.all([1, 2, 3, 4].map(() => slowloris(t.ingress.url)));
    const normal = await t.post(webhook);
    expect(normal.status).toBe(200);
    // Still trickling when cut: the server closed them, and told them why.
    await waitFor(() => slow.every((s) => s.closed()), { what: 'every slowloris connection closed by the ingress', timeoutMs: 15_000 });
    for (const s of slow) expect(s.received()).toMatch(/^HTTP\/1\.1 408/);
    expect((await t.post(webhook)).status).toBe(200);
  });

  it('closes connections past INGRESS_MAX_CONNECTIONS at once, and serves again when one is freed', async () => {
    // Headers limit far longer than the test: only the cap is at work here.
    const t = await ingress({ ingressMaxConnections: 3, ingressHeadersTimeoutMs: 60_000, ingressRequestTimeoutMs: 60_000 });
    await Promise.all([1, 2, 3].map(() => slowloris(t.ingress.url)));
    await waitFor(
      async () => {
        try {
          await t.post(webhook);
          return false;
        } catch {
          return true; // the connection was closed without an answer
        }
      },
      { what: 'a fourth connection refused', timeoutMs: 15_000 },
    );
    sockets[0]?.destroy();
    const served = await waitFor(
      async () => {
        try {
          return (await t.post(webhook)).status;
        } catch {
          return undefined;
        }
      },
      { what: 'served again once a connection closed', timeoutMs: 15_000 },
    );
    expect(served).toBe(200);
  });
});
