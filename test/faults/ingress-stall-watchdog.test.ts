import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIngress, type TestIngress } from '../integration/ingress-harness.js';
import { waitFor } from '../helpers/wait-for.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * A broker that stops answering (paused with SIGSTOP) leaves the ingress's produce request
 * pending: the ingress shows as stalled, the watchdog gives the request up for a new producer,
 * and, the broker still paused, fails liveness; once the broker answers again, acknowledgements
 * flow and the process is live again.
 */
let broker: PrivateService | undefined;
let t: TestIngress | undefined;

beforeAll(async () => {
  if (!nativeKafka) return;
  broker = await startPrivateKafka();
  // The ack time limit is far longer than the pause, so accepted records stay pending meanwhile.
  t = await startTestIngress({ produceTimeoutMs: 120_000 }, { KAFKA_BROKERS: broker.address }, { quiet: true, watch: { checkIntervalMs: 200, stallMs: 2000, livenessMs: 2000 } });
}, 180_000);

afterAll(async () => {
  const pid = broker?.service.runningPid();
  if (pid !== undefined) process.kill(pid, 'SIGCONT');
  try {
    await t?.stop();
  } finally {
    await broker?.dispose();
  }
}, 120_000);

const gauge = async (ingress: TestIngress, name: string): Promise<number> => {
  const match = new RegExp(`^${name}\\{stage="ingress"\\} ([\\d.]+)$`, 'm').exec(await ingress.metrics.metrics());
  return match ? Number(match[1]) : -1;
};

describe.skipIf(!nativeKafka)('ingress under the stall watchdog', () => {
  it('is restarted when the broker stops answering, fails liveness while it still does not, and is live again once it answers', async () => {
    const ingress = t as TestIngress;
    expect((await ingress.post({ Event: 'ContractChanged', ContractId: 'c-warm' })).status).toBe(200);

    const pid = (broker as PrivateService).service.runningPid() as number;
    process.kill(pid, 'SIGSTOP');
    let posts: Promise<unknown>[] = [];
    try {
      posts = Array.from({ length: 5 }, (_, i) => ingress.post({ Event: 'ContractChanged', ContractId: `c-${i}` }));
      await waitFor(async () => (await gauge(ingress, 'billing_loader_stage_stalled_seconds')) >= 1, { what: 'the ingress shows as stalled', timeoutMs: 60_000 });
      await waitFor(async () => (await gauge(ingress, 'billing_loader_stage_restarts_total')) === 1, { what: 'the watchdog restarted the ingress producer', timeoutMs: 60_000 });
      await waitFor(() => !ingress.health.liveness().live, { what: 'liveness fails', timeoutMs: 60_000 });
      expect(Object.keys(ingress.health.liveness().failing)).toEqual(['stage.ingress']);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // Whatever the given-up request's callers were answered, the sender retries them; new webhooks are acknowledged.
    await Promise.allSettled(posts);
    await waitFor(async () => (await ingress.post({ Event: 'ContractChanged', ContractId: 'c-after' })).status === 200, { what: 'a webhook acknowledged again', timeoutMs: 120_000 });
    await waitFor(() => ingress.health.liveness().live, { what: 'live again', timeoutMs: 60_000 });
    expect(await gauge(ingress, 'billing_loader_stage_stalled_seconds')).toBe(0);
  }, 300_000);
});
