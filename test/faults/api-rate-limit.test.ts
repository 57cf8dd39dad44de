import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';
import { apiAnswers } from './api-answers.js';

/**
 * The billing API's request limit drops to 2 per second mid-scenario, far below the loader's own
 * budget, so it answers 429 without Retry-After, as the service documents. The budget backs off
 * (full jitter, doubling per 429 in a row) and the enricher pauses; nothing
 * goes to the DLQ, nothing is lost, and it catches up once the limit is lifted (docs/CONTRACT.md
 * properties 7 and 8).
 */
let run: FaultRun;
beforeAll(async () => {
  run = await startFaultRun({ fault: 'api-rate-limit', seed: 707 });
});
afterAll(async () => {
  await run?.stop();
});

describe('fault: the billing API rate-limits (429)', () => {
  it('backs off, dead-letters nothing, and catches up', async () => {
    const scenario = run.playScenario();
    await run.waitForRows(30);
    run.sim.setRateLimit({ requestsPerSecond: 2, burst: 2 });
    try {
      await run.eventsLater(40);
    } finally {
      run.sim.setRateLimit({ requestsPerSecond: 0 });
    }
    expect((await scenario).completed).toBe(true);
    const result = await run.finish();
    expect(apiAnswers(run.sim, /^429$/)).toBeGreaterThan(0);
    expectNothingLost(result, run.logs());
  });
});
