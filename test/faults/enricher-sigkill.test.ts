import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';

/**
 * kill -9 of the enricher mid-scenario, then a restart. Its open transaction (snapshots, heads,
 * offsets) is aborted by the new owner's fence, the batch is read again, and the restored heads
 * keep the numbering: no gap, no repeated version, nothing lost (docs/CONTRACT.md properties 4 and 6).
 */
let run: FaultRun;
beforeAll(async () => {
  run = await startFaultRun({ fault: 'enricher-sigkill', seed: 202 });
});
afterAll(async () => {
  await run?.stop();
});

describe('fault: SIGKILL of the enricher', () => {
  it('loses nothing and repeats no version', async () => {
    const scenario = run.playScenario();
    await run.waitForRows(30);
    await run.kill('enricher');
    await run.eventsLater(10); // webhooks accepted while no enricher runs
    await run.start('enricher');
    expect((await scenario).completed).toBe(true);
    expectNothingLost(await run.finish(), run.logs());
  });
});
