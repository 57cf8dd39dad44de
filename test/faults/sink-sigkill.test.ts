import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';

/**
 * kill -9 of the sink mid-scenario, then a restart. Offsets are committed only after the
 * database COMMIT, so the batches in flight are delivered again and written once: no gap, no
 * duplicate row, every acknowledged webhook a row (docs/CONTRACT.md properties 5 and 6).
 */
let run: FaultRun;
beforeAll(async () => {
  run = await startFaultRun({ fault: 'sink-sigkill', seed: 303 });
});
afterAll(async () => {
  await run?.stop();
});

describe('fault: SIGKILL of the sink', () => {
  it('loses nothing and writes nothing twice', async () => {
    const scenario = run.playScenario();
    await run.waitForRows(30);
    await run.kill('sink');
    await run.eventsLater(10); // versions published while no sink runs
    await run.start('sink');
    expect((await scenario).completed).toBe(true);
    expectNothingLost(await run.finish(), run.logs());
  });
});
