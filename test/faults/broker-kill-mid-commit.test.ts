import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * The Kafka broker frozen (SIGSTOP) under load and then killed (SIGKILL) before it answers
 * again: every request in flight at the freeze, the enricher's transaction commits (EndTxn) and
 * offset sends among them, never gets an answer, and the broker comes back from an unclean stop
 * with those transactions to complete. Under steady load the enricher commits a transaction per
 * part all the time, so some commit is in flight or about to be at the freeze: its outcome is
 * unknown to the enricher, which must neither lose nor repeat a version (docs/CONTRACT.md
 * properties 1, 4 and 6).
 */
let kafka: PrivateService | undefined;
let run: FaultRun | undefined;
beforeAll(async () => {
  if (!nativeKafka) return;
  kafka = await startPrivateKafka();
  run = await startFaultRun({ fault: 'broker-kill-mid-commit', seed: 434, env: { KAFKA_BROKERS: kafka.address } });
});
afterAll(async () => {
  try {
    await run?.stop();
  } finally {
    await kafka?.dispose();
  }
});

// A fetcher transaction whose commit the broker acknowledged right before its shutdown can be
// left without markers in a partition (a hanging transaction); the fetcher closes it
// (src/kafka/hanging-transactions.ts, src/enricher/hidden-commit-watch.ts).
describe.skipIf(!nativeKafka)('fault: the Kafka broker killed while transactions are being committed', () => {
  it('loses no acknowledged webhook and writes exact versions', async () => {
    const r = run as FaultRun;
    const broker = (kafka as PrivateService).service;
    // Steady load through the outage and after it.
    const stopLoad = new AbortController();
    const scenario = r.sim.runScenario({ name: 'default', customers: 16, stepDelayMs: 100, loop: true, signal: stopLoad.signal });
    try {
      await r.waitForRows(30);
      const pid = broker.runningPid() as number;
      try {
        process.kill(pid, 'SIGSTOP');
        // Requests hang rather than fail while the broker is frozen: the ingress times its writes out.
        await waitFor(() => r.sim.deliveries().some((d) => d.attempts.some((a) => a.status === 503)), { timeoutMs: 60_000, what: 'a 503 from the ingress' });
        process.kill(pid, 'SIGKILL');
        process.kill(pid, 'SIGCONT');
        await waitFor(() => broker.runningPid() === undefined, { what: 'the broker gone' });
      } finally {
        await broker.start();
        await broker.waitReady(90_000);
      }
      await r.eventsLater(5);
    } finally {
      stopLoad.abort();
    }
    expect((await scenario).events).toBeGreaterThan(0);
    const result = await r.finish();
    expect(result.figures.failedAttempts).toBeGreaterThan(0);
    expectNothingLost(result, r.logs());
  });
});
