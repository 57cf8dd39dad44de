import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * The Kafka broker restarted twice in a row under load: the second stop comes while the
 * components are still recovering from the first (coordinators loading, transactions being
 * completed, partitions being fenced and restored again). Nothing acknowledged is lost and no
 * version is repeated (docs/CONTRACT.md properties 1 and 6).
 */
let kafka: PrivateService | undefined;
let run: FaultRun | undefined;
beforeAll(async () => {
  if (!nativeKafka) return;
  kafka = await startPrivateKafka();
  run = await startFaultRun({ fault: 'broker-restart-twice', seed: 414, env: { KAFKA_BROKERS: kafka.address } });
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
describe.skipIf(!nativeKafka)('fault: the Kafka broker restarted twice in a row', () => {
  it('loses no acknowledged webhook and writes exact versions', async () => {
    const r = run as FaultRun;
    const broker = (kafka as PrivateService).service;
    // Steady load through both outages (the default scenario alone can be over before the second).
    const stopLoad = new AbortController();
    const scenario = r.sim.runScenario({ name: 'default', customers: 16, stepDelayMs: 100, loop: true, signal: stopLoad.signal });
    try {
      await r.waitForRows(30);
      for (let restart = 0; restart < 2; restart++) {
        const refusedBefore = r.sim.deliveries().filter((d) => d.attempts.some((a) => a.status === 503)).length;
        try {
          await broker.stop();
          // Each outage is seen by the sender: a delivery refused that was not refused before.
          await waitFor(() => r.sim.deliveries().filter((d) => d.attempts.some((a) => a.status === 503)).length > refusedBefore, { timeoutMs: 60_000, what: 'a 503 from the ingress' });
        } finally {
          await broker.start();
          await broker.waitReady(90_000);
        }
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
