import type { Admin } from 'kafkajs';
import { UserError } from '../errors.js';

/** Where to move a consumer group: the log's start, the first record at or after a time, or explicit offsets. */
export type ResetTarget =
  | { kind: 'beginning' }
  | { kind: 'timestamp'; ms: number }
  /** Partition -> offset, for one topic; partitions not named keep their committed offset. */
  | { kind: 'offsets'; topic: string; offsets: Map<number, string> };

export interface OffsetMove {
  topic: string;
  partition: number;
  /** The committed offset, or null when the group has none for this partition. */
  from: string | null;
  to: string;
}

/**
 * Refuses while the group has members: moving offsets under a running consumer would be
 * overwritten by its next commit (and Kafka rejects it anyway). The message says what to stop.
 */
export async function assertGroupInactive(admin: Admin, groupId: string, what: string, command = 'replay'): Promise<void> {
  const { groups } = await admin.describeGroups([groupId]);
  const members = groups[0]?.members ?? [];
  if (members.length > 0) {
    const who = [...new Set(members.map((m) => `${m.clientId}@${m.clientHost.replace(/^\//, '')}`))].join(', ');
    throw new UserError(`consumer group '${groupId}' has ${members.length} active member(s) (${who}); stop the ${what} first, then run ${command} again`);
  }
}

/** The committed offsets of `groupId` on `topics`, partition by partition (null: none committed). */
export async function committedOffsets(admin: Admin, groupId: string, topics: string[]): Promise<Map<string, Map<number, string | null>>> {
  const result = new Map<string, Map<number, string | null>>();
  for (const t of await admin.fetchOffsets({ groupId, topics })) {
    result.set(t.topic, new Map(t.partitions.map((p) => [p.partition, Number(p.offset) < 0 ? null : p.offset])));
  }
  return result;
}

/** Computes the moves for `target` without changing anything (what `--dry-run` prints). */
export async function planReset(admin: Admin, groupId: string, topics: string[], target: ResetTarget): Promise<OffsetMove[]> {
  const existing = new Set(await admin.listTopics());
  for (const topic of topics) if (!existing.has(topic)) throw new UserError(`topic '${topic}' does not exist; check TOPIC_PREFIX or --topic`);
  const committed = await committedOffsets(admin, groupId, topics);
  const moves: OffsetMove[] = [];
  for (const topic of topics) {
    const ends = await admin.fetchTopicOffsets(topic);
    let targets: Map<number, string>;
    if (target.kind === 'beginning') targets = new Map(ends.map((p) => [p.partition, p.low]));
    else if (target.kind === 'timestamp') targets = new Map((await admin.fetchTopicOffsetsByTimestamp(topic, target.ms)).map((p) => [p.partition, p.offset]));
    else if (target.topic !== topic) continue;
    else {
      targets = new Map();
      for (const [partition, offset] of target.offsets) {
        const range = ends.find((p) => p.partition === partition);
        if (!range) throw new UserError(`topic '${topic}' has no partition ${partition} (it has ${ends.length})`);
        if (BigInt(offset) < BigInt(range.low) || BigInt(offset) > BigInt(range.high)) {
          throw new UserError(`offset ${offset} is outside partition ${partition} of '${topic}' (${range.low}..${range.high})`);
        }
        targets.set(partition, offset);
      }
    }
    for (const [partition, to] of [...targets].sort((a, b) => a[0] - b[0])) {
      moves.push({ topic, partition, from: committed.get(topic)?.get(partition) ?? null, to });
    }
  }
  return moves;
}

/** Commits the planned offsets for the group (which must have no members). */
export async function applyReset(admin: Admin, groupId: string, moves: OffsetMove[]): Promise<void> {
  const byTopic = new Map<string, { partition: number; offset: string }[]>();
  for (const m of moves) byTopic.set(m.topic, [...(byTopic.get(m.topic) ?? []), { partition: m.partition, offset: m.to }]);
  for (const [topic, partitions] of byTopic) await admin.setOffsets({ groupId, topic, partitions });
}

/** Parses `p:o,p:o` (partition:offset pairs). */
export function parsePartitionOffsets(text: string): Map<number, string> {
  const result = new Map<number, string>();
  for (const pair of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\d+):(\d+)$/.exec(pair);
    if (!m?.[1] || !m[2]) throw new UserError(`--to-offsets: expected partition:offset pairs such as 0:120,1:98, got '${pair}'`);
    result.set(Number(m[1]), m[2]);
  }
  if (result.size === 0) throw new UserError('--to-offsets: expected partition:offset pairs such as 0:120,1:98');
  return result;
}
