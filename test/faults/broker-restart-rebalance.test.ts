import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * The Kafka broker stopped while the groups rebalance: two enrichers and two sinks share the
 * partitions; one of each leaves (SIGTERM, drained) and the broker is stopped at once, while the
 * remaining instances are taking over the partitions (fencing, restoring heads); it comes back
 * and the two instances start again, a second rebalance right after the restart. Nothing
 * acknowledged is lost and no version is repeated (docs/CONTRACT.md properties 1, 4 and 6).
 */
let kafka: PrivateService | undefined;
let run: FaultRun | undefined;
beforeAll(async () => {
  if (!nativeKafka) return;
  kafka = await startPrivateKafka();
  run = await startFaultRun({ fault: 'broker-restart-rebalance', seed: 424, env: { KAFKA_BROKERS: kafka.address }, instances: { enricher: 2, sink: 2 } });
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
describe.skipIf(!nativeKafka)('fault: the Kafka broker stopped during a rebalance', () => {
  it('loses no acknowledged webhook and writes exact versions', async () => {
    const r = run as FaultRun;
    const broker = (kafka as PrivateService).service;
    // Steady load through the outage and after it.
    const stopLoad = new AbortController();
    const scenario = r.sim.runScenario({ name: 'default', customers: 16, stepDelayMs: 100, loop: true, signal: stopLoad.signal });
    try {
      await r.waitForRows(30);
      await Promise.all([r.terminate('enricher', 1), r.terminate('sink', 1)]);
      try {
        await broker.stop();
        await waitFor(() => r.sim.deliveries().some((d) => d.attempts.some((a) => a.status === 503)), { timeoutMs: 60_000, what: 'a 503 from the ingress' });
      } finally {
        await broker.start();
        await broker.waitReady(90_000);
      }
      await Promise.all([r.start('enricher', 1), r.start('sink', 1)]);
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
