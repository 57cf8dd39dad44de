import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from '../integration/ingress-harness.js';
import { waitFor } from '../helpers/wait-for.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * A broker that stops answering (paused with SIGSTOP: connections stay open, nothing comes back)
 * must not make the ingress queue webhooks without bound: past INGRESS_MAX_PENDING_BYTES it
 * answers 503 at once, and what it accepted is written once the broker answers again.
 */
const MAX_PENDING = 32 * 1024;
const PAD = 'x'.repeat(1000);
/** Webhooks sent past the bound to measure memory: 1500 of 8 KB, 12 MB that must not be kept. */
const FLOOD = 1500;
const BIG_PAD = 'y'.repeat(8000);

// A full collection before each reading, so the figures are what is retained, not garbage.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const retainedBytes = async () => {
  // Buffers outside the heap are freed by callbacks after a collection: let them run, collect again.
  gc();
  await new Promise((resolve) => setTimeout(resolve, 200));
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

let broker: PrivateService | undefined;
let t: TestIngress | undefined;

beforeAll(async () => {
  if (!nativeKafka) return;
  broker = await startPrivateKafka();
  // The ack time limit is far longer than the pause, so accepted records stay pending meanwhile.
  t = await startTestIngress({ produceTimeoutMs: 120_000, ingressMaxPendingBytes: MAX_PENDING }, { KAFKA_BROKERS: broker.address }, { quiet: true });
}, 180_000);

afterAll(async () => {
  try {
    await t?.stop();
  } finally {
    await broker?.dispose();
  }
}, 120_000);

async function pendingBytes(ingress: TestIngress): Promise<number> {
  const text = await ingress.metrics.metrics();
  const match = /^billing_loader_ingress_pending_bytes (\d+)$/m.exec(text);
  if (!match) throw new Error('no billing_loader_ingress_pending_bytes in /metrics');
  return Number(match[1]);
}

describe.skipIf(!nativeKafka)('ingress: bytes waiting for an unresponsive broker are bounded', () => {
  it('answers 503 at once past the bound, keeps the pending bytes under it, and writes what it accepted once the broker answers', async () => {
    const ingress = t as TestIngress;
    const warm = await ingress.post({ Event: 'ContractChanged', ContractId: 'c-warm' });
    expect(warm.status).toBe(200);

    const pid = (broker as PrivateService).service.runningPid() as number;
    process.kill(pid, 'SIGSTOP');
    const answers: { id: string; status: number; body: { event_id?: string; error?: string } }[] = [];
    let posts: Promise<void>[] = [];
    const total = 120;
    try {
      posts = Array.from({ length: total }, (_, i) =>
        ingress.post({ Event: 'ContractChanged', ContractId: `c-${i}`, Note: PAD }).then((answer) => void answers.push({ id: `c-${i}`, ...answer })),
      );
      // 120 webhooks of ~1 KB against a 32 KiB bound: most cannot be queued. They are answered
      // while the broker is still paused, i.e. without waiting for it.
      await waitFor(() => answers.length >= total / 2, { what: 'the webhooks past the bound answered while the broker is paused', timeoutMs: 60_000 });
      for (const a of answers) {
        expect(a.status).toBe(503);
        expect(a.body.error).toMatch(/too many webhooks are waiting for Kafka/);
      }
      const pending = await pendingBytes(ingress);
      expect(pending).toBeGreaterThan(0);
      expect(pending).toBeLessThanOrEqual(MAX_PENDING);

      // Many more while the broker is still paused: every one refused, none kept in memory.
      const before = await retainedBytes();
      for (let sent = 0; sent < FLOOD; sent += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, (_, i) => ingress.post({ Event: 'ContractChanged', ContractId: `f-${sent + i}`, Note: BIG_PAD })));
        for (const a of batch) expect(a.status).toBe(503);
      }
      const grown = (await retainedBytes()) - before;
      expect(await pendingBytes(ingress)).toBeLessThanOrEqual(MAX_PENDING);
      // 12 MB of webhooks went through; what stays is far below that (client and server together).
      expect(grown, `retained ${grown} bytes more after ${FLOOD} refused webhooks of 8 KB`).toBeLessThan(4 * 1024 * 1024);
    } finally {
      process.kill(pid, 'SIGCONT');
    }

    await Promise.all(posts);
    const accepted = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 503);
    expect(accepted.length + refused.length).toBe(total);
    expect(accepted.length).toBeGreaterThan(0);
    await waitFor(async () => (await pendingBytes(ingress)) === 0, { what: 'nothing pending once the broker answered' });
    const written = new Set((await ingress.readAll()).map((r) => r.value.event_id));
    for (const a of accepted) expect(written.has(a.body.event_id as string), a.id).toBe(true);
  }, 180_000);
});
