import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The patches in patches/ (applied by patch-package after every install) change kafkajs's own
// source, so these tests drive kafkajs's transaction manager itself, over a stand-in cluster
// whose group coordinator answers as one does in the seconds after a broker restart.
const require = createRequire(import.meta.url);
const createEosManager = require('kafkajs/src/producer/eosManager/index.js') as (options: Record<string, unknown>) => EosManager;
const { createErrorFromCode } = require('kafkajs/src/protocol/error.js') as { createErrorFromCode(code: number): Error & { type: string } };
const COORDINATOR_TYPES = require('kafkajs/src/protocol/coordinatorTypes.js') as { GROUP: number; TRANSACTION: number };
const Runner = require('kafkajs/src/consumer/runner.js') as new (options: Record<string, unknown>) => { start(): Promise<void> };

interface EosManager {
  initProducerId(): Promise<void>;
  beginTransaction(): void;
  sendOffsets(offsets: { consumerGroupId: string; topics: unknown[] }): Promise<void>;
}

const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, namespace: () => logger };
const offsets = { consumerGroupId: 'g', topics: [{ topic: 't', partitions: [{ partition: 0, offset: '1' }] }] };

/** A transaction in progress whose TxnOffsetCommit fails with `codes`, one per attempt, then succeeds. */
async function transactionWhoseOffsetCommitFails(codes: number[]) {
  const seen = { commits: 0, groupLookups: 0 };
  const transactionCoordinator = {
    initProducerId: async () => ({ producerId: 1, producerEpoch: 0 }),
    addOffsetsToTxn: async () => undefined,
  };
  const groupCoordinator = {
    txnOffsetCommit: async () => {
      const code = codes[seen.commits++];
      if (code !== undefined) throw createErrorFromCode(code);
    },
  };
  const cluster = {
    retry: { retries: 5, initialRetryTime: 1, maxRetryTime: 5 },
    refreshMetadataIfNecessary: async () => undefined,
    findGroupCoordinator: async ({ coordinatorType }: { coordinatorType: number }) => {
      if (coordinatorType === COORDINATOR_TYPES.TRANSACTION) return transactionCoordinator;
      seen.groupLookups++;
      return groupCoordinator;
    },
  };
  const eos = createEosManager({ logger, cluster, transactional: true, transactionalId: 'tx' });
  await eos.initProducerId();
  eos.beginTransaction();
  return { send: () => eos.sendOffsets(offsets), seen };
}

describe('kafkajs patches', () => {
  // kafkajs names code 14 GROUP_LOAD_IN_PROGRESS; its TxnOffsetCommit retry list said
  // COORDINATOR_LOAD_IN_PROGRESS, so a loading coordinator failed the transaction at once.
  it('TxnOffsetCommit is retried while the group coordinator loads', async () => {
    const t = await transactionWhoseOffsetCommitFails([14, 14]);
    await t.send();
    expect(t.seen.commits).toBe(3);
  });

  // Codes 15 and 16 are GROUP_COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR_FOR_GROUP in kafkajs;
  // the list said COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR, so a moved coordinator was never
  // looked up again.
  it('TxnOffsetCommit looks the group coordinator up again when it moved or is not available', async () => {
    const t = await transactionWhoseOffsetCommitFails([16, 15]);
    await t.send();
    expect(t.seen.commits).toBe(3);
    expect(t.seen.groupLookups).toBe(3);
  });

  // A consumer whose start failed after the coordinator had given it a member id (JoinGroup
  // answered, SyncGroup refused while the coordinator loads after a broker restart) crashed
  // without a LeaveGroup; the restarted consumer joined as a new member, and the coordinator
  // waited for the old id, which no process held, up to the session or rebalance timeout.
  it('a consumer whose start fails after joining leaves the group before it crashes', async () => {
    const loading = createErrorFromCode(14);
    const seen = { left: [] as string[], crashed: [] as unknown[] };
    const consumerGroup = {
      groupId: 'g',
      memberId: null as string | null,
      connect: async () => undefined,
      joinAndSync: async () => {
        consumerGroup.memberId = 'member-1';
        throw loading;
      },
      leave: async () => {
        if (consumerGroup.memberId) seen.left.push(consumerGroup.memberId);
        consumerGroup.memberId = null;
      },
      getNodeIds: () => [],
    };
    const runner = new Runner({ logger, consumerGroup, instrumentationEmitter: { emit: () => undefined }, concurrency: 1, eachBatch: async () => undefined, onCrash: (err: unknown) => void seen.crashed.push(err) });
    await runner.start();
    expect(seen.crashed).toEqual([loading]);
    expect(seen.left).toEqual(['member-1']);
  });
});
