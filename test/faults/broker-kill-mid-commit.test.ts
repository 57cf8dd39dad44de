import { describe, expect, it } from 'vitest';
import { brokerOutage, underSteadyLoad, useBrokerFaultRun } from './broker-faults.js';
import { expectNothingLost } from './fault-harness.js';
import { nativeKafka } from './private-services.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The Kafka broker frozen (SIGSTOP) under load and then killed (SIGKILL) before it answers
 * again: every request in flight at the freeze, the enricher's transaction commits (EndTxn) and
 * offset sends among them, never gets an answer, and the broker comes back from an unclean stop
 * with those transactions to complete. Under steady load the enricher commits a transaction per
 * part all the time, so some commit is in flight or about to be at the freeze: its outcome is
 * unknown to the enricher, which must neither lose nor repeat a version (docs/CONTRACT.md
 * properties 1, 4 and 6).
 */
const faultRun = useBrokerFaultRun({ fault: 'broker-kill-mid-commit', seed: 434 });

// A fetcher transaction whose commit the broker acknowledged right before its shutdown can be
// left without markers in a partition (a hanging transaction); the fetcher closes it
// (src/kafka/hanging-transactions.ts, src/enricher/hidden-commit-watch.ts).
describe.skipIf(!nativeKafka)('fault: the Kafka broker killed while transactions are being committed', () => {
  it('loses no acknowledged webhook and writes exact versions', async () => {
    const { run: r, broker } = faultRun();
    const scenario = await underSteadyLoad(r, () =>
      brokerOutage(r, broker, async () => {
        const pid = broker.runningPid() as number;
        // Frozen first: requests hang rather than fail, and the ingress times its writes out;
        // then killed mid-way through whatever it was committing.
        process.kill(pid, 'SIGSTOP');
        await waitFor(() => r.sim.deliveries().some((d) => d.attempts.some((a) => a.status === 503)), { timeoutMs: 60_000, what: 'a 503 from the ingress' });
        process.kill(pid, 'SIGKILL');
        process.kill(pid, 'SIGCONT');
        await waitFor(() => broker.runningPid() === undefined, { what: 'the broker gone' });
      }),
    );
    expect(scenario.events).toBeGreaterThan(0);
    const result = await r.finish();
    expect(result.figures.failedAttempts).toBeGreaterThan(0);
    expectNothingLost(result, r.logs());
  });
});
