import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';
import { apiAnswers } from './api-answers.js';

/**
 * The billing API answers every request (token endpoint included) with 500, 502 or 503 for a
 * while, mid-scenario. The enricher retries with backoff and pauses its partitions; nothing goes
 * to the DLQ for an outage, and once the API is back every version lands exactly (docs/CONTRACT.md
 * property 7).
 */
let run: FaultRun;
beforeAll(async () => {
  run = await startFaultRun({ fault: 'api-5xx', seed: 606 });
});
afterAll(async () => {
  await run?.stop();
});

describe('fault: the billing API answers 5xx for a while', () => {
  it('retries, dead-letters nothing, and catches up', async () => {
    const scenario = run.playScenario();
    await run.waitForRows(30);
    run.sim.setFaults({ errorRate: 1 });
    try {
      await run.eventsLater(40); // the scenario goes on while every fetch fails
    } finally {
      run.sim.setFaults({ errorRate: 0 });
    }
    expect((await scenario).completed).toBe(true);
    const result = await run.finish();
    expect(apiAnswers(run.sim, /^5\d\d$/)).toBeGreaterThan(0);
    expectNothingLost(result, run.logs());
  });
});
