import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';

/**
 * kill -9 of the ingress mid-scenario, then a restart on the same port. Webhooks sent while it is
 * down (refused connections, or cut mid-request) are retried by the sender (spec 6.1) and land
 * later; every one it had acknowledged is in the warehouse (docs/CONTRACT.md properties 1 and 6).
 */
let run: FaultRun;
beforeAll(async () => {
  run = await startFaultRun({ fault: 'ingress-sigkill', seed: 101 });
});
afterAll(async () => {
  await run?.stop();
});

describe('fault: SIGKILL of the ingress', () => {
  it('loses no acknowledged webhook and writes exact versions', async () => {
    const scenario = run.playScenario();
    await run.waitForRows(30);
    await run.kill('ingress');
    await run.eventsLater(10); // events emitted while nothing listens
    await run.start('ingress');
    expect((await scenario).completed).toBe(true);
    const result = await run.finish();
    // The outage was real: the sender saw failed attempts and retried them.
    expect(result.figures.failedAttempts).toBeGreaterThan(0);
    expectNothingLost(result, run.logs());
  });
});
