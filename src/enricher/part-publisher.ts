import type { Producer } from 'kafkajs';
import { LoaderError, errorMessage } from '../errors.js';
import type { CommittedWrite } from '../kafka/commit-visibility.js';
import { createDeadLetterEncoder } from '../kafka/dead-letters.js';
import type { MessageLimits } from '../kafka/message-limits.js';
import { sendOffsets } from '../kafka/send-offsets.js';
import { partitionBySize, splitSends } from '../kafka/split-sends.js';
import type { Registry } from '../registry/registry.js';
import type { DeadLetter } from '../wire/dead-letter.js';
import type { EnricherTopics, TopicNames } from '../wire/topics.js';
import { holdBackTooLarge, type PartPlan, type PartSource, type Pending } from './part-plan.js';

export interface PartPublisherDeps {
  registry: Registry;
  snapshotSchemaId: number;
  topics: TopicNames;
  internal: EnricherTopics;
  groupId: string;
  /** Each topic's max.message.bytes (readMessageLimits). */
  limitOf: MessageLimits;
  /** Called after a failed transaction, before the error is thrown (the owner starts over). */
  onFailure: () => Promise<void>;
}

export interface PlannedPart {
  plan: PartPlan;
  groups: [string, Pending[]][];
  /** Dead letters of records that were no fetch request. */
  invalid: DeadLetter[];
  source: PartSource;
  /** The last offset the part covers: the offsets committed are the one after it. */
  lastOffset: string;
}

/**
 * Publishes a planned part: encodes its snapshots and dead letters, holds back a snapshot too
 * large for the broker, and sends everything with the consumer offsets in one transaction.
 * Nothing is published unless all of it is.
 */
export function createPartPublisher(deps: PartPublisherDeps) {
  const { limitOf } = deps;
  // Dead letters ride in the batch's transaction: published exactly when the offsets move past them.
  const encodeDeadLetters = createDeadLetterEncoder('enricher', limitOf);

  /**
   * Returns the plan as published, its dead letters and where its head records ended up (the
   * partition and the offset after the last one; undefined when the broker did not say), or
   * undefined if `stillOwner` said no before the transaction.
   */
  return async (
    producer: Producer,
    part: PlannedPart,
    stillOwner: () => boolean,
    /** Told each step as it starts (for the fetcher's report of a part that does not finish). */
    onStage: (stage: string) => void = () => undefined,
  ): Promise<{ plan: PartPlan; letters: DeadLetter[]; headsEnd?: { partition: number; offset: string }; written: CommittedWrite[] } | undefined> => {
    const { source } = part;
    onStage('encoding');
    const encodedSnapshots = await Promise.all(part.plan.snapshots.map(async (m) => ({ key: m.key, value: await deps.registry.encode(deps.snapshotSchemaId, m.value) })));
    const { publishable, tooLarge } = partitionBySize(encodedSnapshots, limitOf(deps.topics.snapshots));
    const { plan } = holdBackTooLarge(part.plan, part.groups, tooLarge.map((m) => ({ key: m.key, bytes: m.value.length })), { topic: deps.topics.snapshots, maxBytes: limitOf(deps.topics.snapshots) }, source);
    const letters = [...part.invalid, ...plan.letters];
    const encodedLetters = letters.length > 0 ? encodeDeadLetters(letters) : [];

    if (!stillOwner()) return undefined;
    onStage('beginning transaction');
    const transaction = await producer.transaction();
    let headsEnd: { partition: number; offset: string } | undefined;
    let headsUnknown = false;
    // Where each partition's records of this transaction begin: once the last stable offset has
    // passed the first, the transaction is closed there (commit-visibility.ts).
    const written: CommittedWrite[] = [];
    try {
      const topicMessages = [
        { topic: deps.topics.snapshots, messages: publishable },
        { topic: deps.internal.heads, messages: plan.headRecords },
        { topic: deps.internal.requests, messages: plan.followUps },
        { topic: deps.internal.delayed, messages: plan.delayed },
        ...encodedLetters,
      ].filter((t) => t.messages.length > 0);
      // Snapshots carry whole bodies: one send of a big part could exceed the largest record
      // batch a partition accepts. Several sends in one transaction are still all or nothing.
      onStage('sending');
      for (const send of splitSends(topicMessages, limitOf)) {
        const sent = await transaction.sendBatch({ topicMessages: send, acks: -1 });
        for (const r of sent) if (r.baseOffset !== undefined) written.push({ topic: r.topicName, partition: r.partition, end: (BigInt(r.baseOffset) + 1n).toString() });
        const heads = send.find((t) => t.topic === deps.internal.heads)?.messages.length ?? 0;
        if (heads === 0) continue;
        const where = sent.filter((r) => r.topicName === deps.internal.heads);
        const base = where[0]?.baseOffset;
        if (where.length !== 1 || base === undefined || (headsEnd && headsEnd.partition !== where[0]?.partition)) headsUnknown = true;
        else headsEnd = { partition: (where[0] as { partition: number }).partition, offset: (BigInt(base) + BigInt(heads)).toString() };
      }
      onStage('sending offsets');
      await sendOffsets(transaction, {
        consumerGroupId: deps.groupId,
        topics: [{ topic: source.topic, partitions: [{ partition: source.partition, offset: (BigInt(part.lastOffset) + 1n).toString() }] }],
      });
      onStage('committing');
      await transaction.commit();
    } catch (err) {
      onStage(`aborting after: ${errorMessage(err)}`);
      await transaction.abort().catch(() => undefined);
      onStage(`starting the partitions over after: ${errorMessage(err)}`);
      // The retriable error makes kafkajs restart the consumer from the committed offsets.
      await deps.onFailure();
      throw new LoaderError(`snapshot transaction failed, batch will be read again: ${errorMessage(err)}`, { retriable: true, context: { topic: source.topic, partition: source.partition } });
    }
    return { plan, letters, written, ...(headsEnd && !headsUnknown ? { headsEnd } : {}) };
  };
}

export type PartPublisher = ReturnType<typeof createPartPublisher>;
