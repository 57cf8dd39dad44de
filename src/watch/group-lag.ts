import type { Admin, Consumer, Kafka } from 'kafkajs';
import type { WatchMetrics } from './watch-metrics.js';

/** One partition a process owns in a consumer group, as of the last check. */
export interface PartitionLag {
  topic: string;
  partition: number;
  /** The group's committed offset (-1: nothing committed yet). */
  committed: string;
  /** The partition's last stable offset: the end a read_committed consumer can reach. */
  end: string;
  lag: number;
  /** Paused by the stage on purpose (a delayed reread not due yet, an API outage): waiting is its job. */
  paused: boolean;
}

export interface GroupSample {
  partitions: PartitionLag[];
  /** Records waiting on partitions that are not paused. */
  lag: number;
  /** Whether any partition's committed offset moved forward since the previous sample. */
  progressed: boolean;
}

export interface GroupLag {
  /** Follows `consumer`'s assignment from now on (each instance a supervisor creates is attached). Returns it. */
  attach(consumer: Consumer): Consumer;
  /** Reads committed offsets and partition ends of the assigned partitions and sets their gauges. */
  sample(): Promise<GroupSample>;
  /** Removes every gauge of the group, lets the checks under way end (up to 5 s) and closes the admin client; later checks read nothing. */
  close(): Promise<void>;
}

type Assignment = Map<string, number[]>;

/** How long close() waits for a check under way before it disconnects the admin client anyway. */
const CLOSE_WAIT_MS = 5000;

/**
 * The lag of one consumer group, for the partitions this process owns. The assignment comes
 * from the consumer's GROUP_JOIN events: a partition not in the new assignment is revoked, and
 * its gauge goes. While a rebalance is under way the previous assignment is kept, so a consumer
 * that cannot get back into its group still shows the lag it left behind. Offsets are read
 * through an admin client of its own, so the numbers move whether or not batches arrive.
 */
export function createGroupLag(options: { kafka: Kafka; groupId: string; stage: string; metrics: WatchMetrics }): GroupLag {
  const { groupId, stage, metrics } = options;
  let current: Consumer | undefined;
  let assignment: Assignment = new Map();
  let admin: Admin | undefined;
  let connecting: Promise<void> | undefined;
  let closed = false;
  /** Checks under way: more than one when the watchdog gave up waiting for a slow one and began the next. */
  const checking = new Set<Promise<unknown>>();
  const lastCommitted = new Map<string, bigint>();
  const labels = (topic: string, partition: number) => ({ stage, group: groupId, topic, partition: String(partition) });

  const assign = (next: Assignment) => {
    for (const [topic, partitions] of assignment) {
      const kept = new Set(next.get(topic) ?? []);
      for (const p of partitions) {
        if (kept.has(p)) continue;
        metrics.lag.remove(labels(topic, p));
        lastCommitted.delete(`${topic}:${p}`);
      }
    }
    assignment = next;
  };

  const connected = async (): Promise<Admin> => {
    if (closed) throw new Error(`the lag of group ${groupId} is no longer checked`);
    if (!admin) {
      const created = options.kafka.admin();
      admin = created;
      connecting = created.connect().catch((err: unknown) => {
        admin = undefined;
        throw err;
      });
    }
    await connecting;
    return admin as Admin;
  };

  return {
    attach(consumer) {
      current = consumer;
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        if (consumer !== current) return;
        assign(new Map(Object.entries(payload.memberAssignment).map(([topic, partitions]) => [topic, [...partitions]])));
      });
      return consumer;
    },
    async sample() {
      if (closed) return { partitions: [], lag: 0, progressed: false };
      const run = check();
      checking.add(run);
      try {
        return await run;
      } finally {
        checking.delete(run);
      }
    },
    async close() {
      closed = true;
      assign(new Map());
      current = undefined;
      // A check under way connects and reads through the admin client: disconnected under it,
      // kafkajs finishes the connection afterwards and keeps it open (a stage stopped during its
      // first check kept its process up that way). The checks' end is awaited first, for a while.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(checking), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
      const client = admin;
      admin = undefined;
      await client?.disconnect().catch(() => undefined);
    },
  };

  async function check(): Promise<GroupSample> {
    const owned = assignment;
    const topics = [...owned.keys()];
    if (topics.length === 0) return { partitions: [], lag: 0, progressed: false };
    const client = await connected();
    const [committed, ends] = await Promise.all([
      client.fetchOffsets({ groupId, topics }),
      Promise.all(topics.map(async (topic) => [topic, await client.fetchTopicOffsets(topic)] as const)),
    ]);
    if (owned !== assignment) return { partitions: [], lag: 0, progressed: true };
    const paused = new Set((current?.paused() ?? []).flatMap(({ topic, partitions }) => partitions.map((p) => `${topic}:${p}`)));
    const endOf = new Map<string, { offset: string; low: string }>(ends.flatMap(([topic, offsets]) => offsets.map((o) => [`${topic}:${o.partition}`, o] as const)));
    const committedOf = new Map<string, string>(committed.flatMap((t) => t.partitions.map((p) => [`${t.topic}:${p.partition}`, p.offset] as const)));
    const partitions: PartitionLag[] = [];
    let lag = 0;
    let progressed = false;
    for (const [topic, owns] of owned) {
      for (const partition of owns) {
        const key = `${topic}:${partition}`;
        const end = endOf.get(key);
        if (!end) continue;
        const at = committedOf.get(key) ?? '-1';
        // Nothing committed yet: the group starts at the log start (every group here reads from the beginning).
        const from = BigInt(at) < 0n ? BigInt(end.low) : BigInt(at);
        const behind = BigInt(end.offset) - from;
        const records = Number(behind > 0n ? behind : 0n);
        const previous = lastCommitted.get(key);
        if (previous !== undefined && from > previous) progressed = true;
        lastCommitted.set(key, from);
        const isPaused = paused.has(key);
        metrics.lag.set(labels(topic, partition), records);
        partitions.push({ topic, partition, committed: at, end: end.offset, lag: records, paused: isPaused });
        if (!isPaused) lag += records;
      }
    }
    return { partitions, lag, progressed };
  }
}
