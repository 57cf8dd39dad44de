import type { Admin } from 'kafkajs';
import type pg from 'pg';
import { quoteIdent } from '../db/pool.js';
import { UserError } from '../errors.js';
import { assertGroupInactive, committedOffsets } from '../kafka/group-reset.js';
import type { TopicNames } from '../wire/topics.js';

/** One partition of one of the sink's groups: where it is committed, what the warehouse holds, where it goes. */
export interface RewindMove {
  groupId: string;
  topic: string;
  partition: number;
  /** The group's committed offset; null when it has none (the sink then reads the partition from its start anyway). */
  committed: string | null;
  /** The first offset of the partition the warehouse holds no row from (the log's start when it holds none). */
  warehouse: string;
  /** The new committed offset, or null when the partition stays (already at or before the warehouse's mark). */
  to: string | null;
  /** True when the log's start is past the warehouse's mark: the records in between are gone (retention). */
  truncated: boolean;
}

export interface RewindOptions {
  /** The sink's consumer group (SINK_GROUP_ID, else `<prefix>.sink`); its dead-letter group is `<it>.dead-letters`. */
  sinkGroupId: string;
  /** Move a partition whose log no longer starts at the warehouse's mark to the log's start instead of refusing. */
  allowTruncatedLog?: boolean;
  progress?: (line: string) => void;
}

/** `<topic>` -> partition -> the first offset with no row in the warehouse (max stored offset + 1). */
type Marks = Map<string, Map<number, bigint>>;

/**
 * Reads, per topic partition the sink consumes, the first offset the warehouse holds nothing
 * from. The sink writes one partition's batches in offset order, each in one transaction that
 * also carries the batch's rows, so a database restored to any point holds, per partition, the
 * rows of a prefix of the log: every record below the highest stored offset was applied, and
 * the highest stored offset + 1 is a place from which reading again misses nothing. (It may
 * re-read a few records that stored no row, such as replays or dead letters; writes are
 * idempotent.) Webhook rows written before migration 0021 carry no offset and are not counted.
 */
export async function warehouseMarks(pool: pg.Pool, schema: string, names: TopicNames): Promise<Marks> {
  const s = quoteIdent(schema);
  const marks: Marks = new Map();
  const add = (topic: string, partition: number, next: string) => {
    const byPartition = marks.get(topic) ?? new Map<number, bigint>();
    byPartition.set(partition, BigInt(next));
    marks.set(topic, byPartition);
  };
  type Row = { topic: string; p: number; next: string };
  const queries: [string, string[]][] = [
    [`SELECT $1::text AS topic, kafka_partition AS p, (max(kafka_offset) + 1)::text AS next FROM ${s}.resource_versions GROUP BY kafka_partition`, [names.snapshots]],
    [`SELECT $1::text AS topic, kafka_partition AS p, (max(kafka_offset) + 1)::text AS next FROM ${s}.webhook_events WHERE kafka_partition IS NOT NULL GROUP BY kafka_partition`, [names.webhooks]],
    [`SELECT dlq_topic AS topic, dlq_partition AS p, (max(dlq_offset) + 1)::text AS next FROM ${s}.dead_letters WHERE dlq_topic IN ($1, $2) GROUP BY dlq_topic, dlq_partition`, [names.webhooksDlq, names.snapshotsDlq]],
  ];
  for (const [sql, params] of queries) {
    const { rows } = await pool.query<Row>(sql, params);
    for (const r of rows) add(r.topic, r.p, r.next);
  }
  return marks;
}

/**
 * Computes how to move the sink's two groups back to what the warehouse holds, after the
 * database was restored to an earlier point: `<sink group>` on snapshots and webhooks,
 * `<sink group>.dead-letters` on the two DLQs. A partition moves only backwards, to the
 * warehouse's mark; one already at or before it stays. Refuses while either group has a member,
 * when the warehouse holds offsets past a partition's end (another cluster, or a recreated topic:
 * moving would skip records), and, unless `allowTruncatedLog`, when retention has deleted records
 * the warehouse lacks. Changes nothing.
 */
export async function planRewind(admin: Admin, pool: pg.Pool, schema: string, names: TopicNames, options: RewindOptions): Promise<RewindMove[]> {
  const progress = options.progress ?? (() => undefined);
  const groups = [
    { groupId: options.sinkGroupId, topics: [names.snapshots, names.webhooks] },
    { groupId: `${options.sinkGroupId}.dead-letters`, topics: [names.webhooksDlq, names.snapshotsDlq] },
  ];
  for (const g of groups) await assertGroupInactive(admin, g.groupId, 'sink', 'repair sink-offsets');
  const existing = new Set(await admin.listTopics());
  progress(`repair sink-offsets: reading the highest stored offsets of schema ${schema}`);
  const started = performance.now();
  const marks = await warehouseMarks(pool, schema, names);
  progress(`repair sink-offsets: read ${[...marks.values()].reduce((n, m) => n + m.size, 0)} partition mark(s) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const moves: RewindMove[] = [];
  const problems: string[] = [];
  for (const g of groups) {
    for (const topic of g.topics) if (!existing.has(topic) && marks.has(topic)) problems.push(`${topic}: the warehouse holds rows from it but the topic does not exist (check TOPIC_PREFIX)`);
    const present = g.topics.filter((t) => existing.has(t));
    const committed = await committedOffsets(admin, g.groupId, present);
    for (const topic of present) {
      const ranges = await admin.fetchTopicOffsets(topic);
      const partitions = new Set(ranges.map((r) => r.partition));
      for (const p of marks.get(topic)?.keys() ?? []) if (!partitions.has(p)) problems.push(`${topic}: the warehouse holds rows from partition ${p}, which the topic does not have`);
      for (const range of [...ranges].sort((a, b) => a.partition - b.partition)) {
        const low = BigInt(range.low);
        const high = BigInt(range.high);
        const mark = marks.get(topic)?.get(range.partition) ?? low;
        if (mark > high) {
          problems.push(`${topic}:${range.partition}: the warehouse holds offset ${mark - 1n} but the log ends at ${high} (another cluster, or a recreated topic?)`);
          continue;
        }
        const from = committed.get(topic)?.get(range.partition) ?? null;
        const truncated = mark < low;
        const target = truncated ? low : mark;
        const to = from !== null && BigInt(from) > target ? target.toString() : null;
        if (truncated && to !== null && !options.allowTruncatedLog) {
          problems.push(`${topic}:${range.partition}: the warehouse ends at offset ${mark} but retention deleted the log up to ${low}; records ${mark}..${low - 1n} cannot be read again`);
        }
        moves.push({ groupId: g.groupId, topic, partition: range.partition, committed: from, warehouse: mark.toString(), to, truncated });
      }
    }
  }
  if (problems.length > 0) {
    const hint = problems.some((p) => p.includes('retention')) ? '; --allow-truncated-log moves those partitions to their start, accepting the loss' : '';
    throw new UserError(`cannot rewind the sink to the warehouse: ${problems.join('; ')}${hint}`);
  }
  return moves;
}

/** Commits the planned offsets of the partitions that move (both groups must have no members). */
export async function applyRewind(admin: Admin, moves: RewindMove[]): Promise<void> {
  const byGroupTopic = new Map<string, { groupId: string; topic: string; partitions: { partition: number; offset: string }[] }>();
  for (const m of moves) {
    if (m.to === null) continue;
    const key = `${m.groupId}\u0000${m.topic}`;
    const entry = byGroupTopic.get(key) ?? { groupId: m.groupId, topic: m.topic, partitions: [] };
    entry.partitions.push({ partition: m.partition, offset: m.to });
    byGroupTopic.set(key, entry);
  }
  for (const { groupId, topic, partitions } of byGroupTopic.values()) await admin.setOffsets({ groupId, topic, partitions });
}
