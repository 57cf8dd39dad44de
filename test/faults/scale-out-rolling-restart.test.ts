import { AssignerProtocol } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delayForwarderGroupId, enricherGroupId, fetcherGroupId } from '../../src/enricher/enricher.js';
import { errorMessage } from '../../src/errors.js';
import { GROUP_TIMEOUTS } from '../../src/kafka/group-timeouts.js';
import { sinkGroupId } from '../../src/sink/sink.js';
import { waitFor } from '../helpers/wait-for.js';
import { expectNothingLost, startFaultRun, type Component, type FaultRun } from './fault-harness.js';

/**
 * Three enrichers and three sinks, separate processes sharing the partitions (one consumer group
 * per role, a state directory per enricher), under steady webhook load; then a rolling restart
 * of all six, one at a time: SIGTERM, wait for the process to drain and exit, start it again on
 * its own state directory, wait for its /readyz, next. Each stop and start moves partitions
 * between the running instances (heads caught up from each one's local store, transactions
 * fenced), which must lose nothing and repeat no version (docs/CONTRACT.md properties 4 and 6).
 */
const INSTANCES = 3;
let run: FaultRun;
beforeAll(async () => {
  run = await startFaultRun({ fault: 'scale-out-rolling-restart', seed: 505, instances: { enricher: INSTANCES, sink: INSTANCES }, componentEnv: { enricher: { LOG_LEVEL: process.env.FAULT_LOG_LEVEL ?? 'warn' } } });
});
afterAll(async () => {
  await run?.stop();
});

/** How many partitions each member of a group holds, and the group's state. */
async function partitionsPerMember(groupId: string): Promise<{ state: string; counts: number[] }> {
  const admin = run.kafka.admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups([groupId]);
    const counts = (groups[0]?.members ?? []).map((m) => {
      const assignment = m.memberAssignment.length > 0 ? (AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment ?? {}) : {};
      return Object.values(assignment).reduce((n, partitions) => n + partitions.length, 0);
    });
    return { state: groups[0]?.state ?? 'unknown', counts };
  } finally {
    await admin.disconnect();
  }
}

/** Waits until `group` is stable with `members` members, each holding partitions. */
async function expectGroupShared(group: string, members: number, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const { state, counts } = await partitionsPerMember(group);
      if (state !== 'Stable' || counts.length !== members || counts.some((n) => n === 0)) {
        throw new Error(`${state}, partitions per member: [${counts.join(', ')}]`);
      }
      return true;
    },
    { timeoutMs, intervalMs: 500, what: `${members} member(s) of ${group} holding partitions` },
  ).catch((err: unknown) => {
    throw new Error(`${errorMessage(err)}\n${run.logs()}`, { cause: err });
  });
}

/** Every group of the loader has one member per instance, each holding partitions. */
async function expectPartitionsShared(): Promise<void> {
  const prefix = run.config.topicPrefix;
  for (const group of [fetcherGroupId(prefix), delayForwarderGroupId(prefix), sinkGroupId(run.config), enricherGroupId(prefix)]) {
    await expectGroupShared(group, INSTANCES, 60_000);
  }
}

describe('fault: rolling restart of three enrichers and three sinks under load', () => {
  it('loses nothing and repeats no version', async () => {
    const stopLoad = new AbortController();
    const scenario = run.sim.runScenario({ name: 'default', customers: 16, stepDelayMs: 100, loop: true, signal: stopLoad.signal });
    try {
      await run.waitForRows(30);
      await expectPartitionsShared();
      for (const component of ['enricher', 'sink'] as Component[]) {
        for (let i = 0; i < INSTANCES; i++) {
          await run.terminate(component, i);
          await run.start(component, i);
          // A router that stayed out of its group for over a minute after a restart (the
          // coordinator waiting for member ids no process held) must be back within the
          // session timeout of the restarted one's start.
          if (component === 'enricher') await expectGroupShared(enricherGroupId(run.config.topicPrefix), INSTANCES, GROUP_TIMEOUTS.sessionTimeout);
          await run.eventsLater(5); // the load goes on with the instance back
        }
      }
      await expectPartitionsShared();
    } finally {
      stopLoad.abort();
    }
    expect((await scenario).events).toBeGreaterThan(0);
    expectNothingLost(await run.finish(), run.logs());
  });
});
