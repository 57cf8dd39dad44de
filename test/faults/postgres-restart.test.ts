import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorMessage } from '../../src/errors.js';
import { waitFor } from '../helpers/wait-for.js';
import { expectNothingLost, startFaultRun, type FaultRun } from './fault-harness.js';
import { nativeKafka, startPrivatePostgres, type PrivateService } from './private-services.js';

/**
 * PostgreSQL stopped mid-scenario and started again. The sink retries its batch with backoff and
 * moves no offset meanwhile, so once the database is back every version and every webhook is
 * written exactly once, and nothing is sent to the DLQ for an outage (docs/CONTRACT.md properties 6
 * and 7). The server is this test's own (see private-services.ts).
 */
let postgres: PrivateService | undefined;
let run: FaultRun | undefined;
beforeAll(async () => {
  if (!nativeKafka) return;
  postgres = await startPrivatePostgres();
  run = await startFaultRun({ fault: 'postgres-restart', seed: 505, env: { DATABASE_URL: postgres.address } });
});
afterAll(async () => {
  try {
    await run?.stop();
  } finally {
    await postgres?.dispose();
  }
});

describe.skipIf(!nativeKafka)('fault: PostgreSQL stopped and restarted', () => {
  it('loses nothing, writes nothing twice, sends nothing to the DLQ', async () => {
    const r = run as FaultRun;
    const server = (postgres as PrivateService).service;
    const scenario = r.playScenario();
    await r.waitForRows(30);
    let sinkNotReady = false;
    try {
      await server.stop();
      // The sink notices (its readiness reports the failing writes) while webhooks keep coming.
      await r.eventsLater(30);
      // A sink that is gone (its probe unreachable) is told apart from one that never noticed.
      sinkNotReady = await waitFor(async () => (await fetch(`${r.opsUrl('sink')}/readyz`)).status === 503, { timeoutMs: 30_000, what: 'sink reports the outage' }).catch((err: unknown) => {
        throw new Error(`${errorMessage(err)}\n${r.logs()}`, { cause: err });
      });
    } finally {
      await server.start();
      await server.waitReady(60_000);
    }
    expect(sinkNotReady).toBe(true);
    expect((await scenario).completed).toBe(true);
    expectNothingLost(await r.finish(), r.logs());
  });
});
