import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';
import { apiAnswers } from './api-answers.js';

/**
 * The billing API stops answering mid-scenario (requests hang until the client's time limit,
 * BILLING_API_TIMEOUT_MS, set to 1 s here). The enricher times out, retries with backoff and
 * pauses; nothing goes to the DLQ, nothing is lost, and it catches up once the API answers again
 * (docs/CONTRACT.md property 7).
 */
let run: FaultRun;
beforeAll(async () => {
  run = await startFaultRun({ fault: 'api-timeouts', seed: 808, componentEnv: { enricher: { BILLING_API_TIMEOUT_MS: '1000' } } });
});
afterAll(async () => {
  await run?.stop();
});

describe('fault: the billing API times out', () => {
  it('times out, retries, dead-letters nothing, and catches up', async () => {
    const scenario = run.playScenario();
    await run.waitForRows(30);
    run.sim.setFaults({ timeoutRate: 1 });
    try {
      await run.eventsLater(40);
    } finally {
      run.sim.setFaults({ timeoutRate: 0 });
    }
    expect((await scenario).completed).toBe(true);
    const result = await run.finish();
    expect(apiAnswers(run.sim, /^hang$/)).toBeGreaterThan(0);
    expectNothingLost(result, run.logs());
  });
});
