import type { Admin, Kafka, KafkaMessage, Message } from 'kafkajs';
import { UserError } from '../errors.js';
import { readToEnd } from '../kafka/read-to-end.js';
import { partitionOfKey } from '../kafka/topic-checks.js';
import { createIdempotentProducer } from '../kafka/producers.js';
import { retry } from '../retry.js';
import { assertGroupInactive } from '../kafka/group-reset.js';
import { enricherGroupId, fetcherGroupId } from './enricher.js';
import { enricherTopics } from '../wire/topics.js';

export interface RepartitionReport {
  partitions: number;
  /** Topics created with more partitions: [topic, from, to]. */
  grown: [string, number, number][];
  headsMoved: number;
  requestsMoved: number;
}

/**
 * Grows `<prefix>.enricher.requests` and `<prefix>.enricher.heads` to `partitions` (default: the
 * larger of their counts) and moves what the fetcher would look for in the wrong place: a
 * resource's partition depends on the count, so after a growth its head must move to the heads
 * partition numbered like its new request partition, and its requests not yet processed must be
 * read there too. Each head is rewritten in its new partition (the highest version wins when a key
 * is found in several) and tombstoned in the old one; every pending request is written again to
 * its partition and the fetcher's offsets are moved past the originals. The enricher (router and
 * fetcher) must be stopped, and nothing else may write requests meanwhile (the backfill).
 * Running it again is harmless: moved heads stay, a request moved twice is fetched twice.
 */
export async function repartitionEnricherTopics(kafka: Kafka, prefix: string, options: { partitions?: number; progress?: (line: string) => void } = {}): Promise<RepartitionReport> {
  const internal = enricherTopics(prefix);
  const progress = options.progress ?? (() => undefined);
  const admin = kafka.admin();
  await admin.connect();
  const producer = createIdempotentProducer(kafka);
  try {
    const existing = new Set(await admin.listTopics());
    for (const topic of [internal.requests, internal.heads]) if (!existing.has(topic)) throw new UserError(`topic '${topic}' does not exist; check TOPIC_PREFIX`);
    await assertGroupInactive(admin, enricherGroupId(prefix), 'enricher');
    await assertGroupInactive(admin, fetcherGroupId(prefix), 'enricher');

    const counts = await partitionCounts(admin, [internal.requests, internal.heads]);
    const target = options.partitions ?? Math.max(...counts.values());
    const grown: [string, number, number][] = [];
    for (const [topic, count] of counts) {
      if (count > target) throw new UserError(`${topic} has ${count} partitions; Kafka cannot shrink a topic to ${target}`);
      if (count < target) grown.push([topic, count, target]);
    }
    if (grown.length > 0) {
      await admin.createPartitions({ topicPartitions: grown.map(([topic]) => ({ topic, count: target })) });
      for (const [topic, from, to] of grown) progress(`${topic}: grew from ${from} to ${to} partitions`);
      // New partitions answer NOT_LEADER for a moment after they are created.
      await retry(
        async () => {
          const now = await partitionCounts(admin, [internal.requests, internal.heads]);
          if ([...now.values()].some((c) => c !== target)) throw Object.assign(new Error('new partitions not visible yet'), { retriable: true });
          for (const topic of now.keys()) await admin.fetchTopicOffsets(topic);
        },
        { attempts: 30, maxDelayMs: 1000 },
      );
    }
    await producer.connect();

    // Heads: the latest record per key in each partition, then one home per key.
    const found = new Map<string, Map<number, Buffer | null>>();
    await readToEnd(kafka, internal.heads, (partition, m) => {
      const key = m.key?.toString('utf8');
      if (key === undefined) return;
      const copies = found.get(key) ?? new Map<number, Buffer | null>();
      copies.set(partition, m.value);
      found.set(key, copies);
    });
    const headMessages: Message[] = [];
    let headsMoved = 0;
    for (const [key, copies] of found) {
      const live = [...copies].filter((c): c is [number, Buffer] => c[1] !== null);
      const home = partitionOfKey(key, target);
      const best = live.sort((a, b) => versionOf(b[1]) - versionOf(a[1]))[0];
      if (!best) continue;
      if (best[0] !== home) {
        headMessages.push({ key, value: best[1], partition: home });
        headsMoved++;
      }
      for (const [partition] of live) if (partition !== home) headMessages.push({ key, value: null, partition });
    }
    if (headMessages.length > 0) await producer.send({ topic: internal.heads, acks: -1, messages: headMessages });
    progress(`${internal.heads}: moved ${headsMoved} head(s) to their partitions of ${target}`);

    // Requests not yet processed: from the fetcher's committed offset to the end, as it stands now.
    const committed = await admin.fetchOffsets({ groupId: fetcherGroupId(prefix), topics: [internal.requests] });
    const ends = await admin.fetchTopicOffsets(internal.requests);
    const from = new Map((committed[0]?.partitions ?? []).filter((p) => BigInt(p.offset) >= 0n).map((p) => [p.partition, p.offset]));
    const pending: KafkaMessage[] = [];
    const passed: { partition: number; offset: string }[] = [];
    await readToEnd(
      kafka,
      internal.requests,
      (partition, m) => {
        const end = ends.find((e) => e.partition === partition);
        if (end && BigInt(m.offset) < BigInt(end.high)) pending.push(m);
      },
      undefined,
      { from },
    );
    for (const e of ends) if (BigInt(e.high) > BigInt(from.get(e.partition) ?? e.low)) passed.push({ partition: e.partition, offset: e.high });
    const requestMessages = pending.flatMap((m) => {
      const key = m.key?.toString('utf8');
      return key === undefined ? [] : [{ key, value: m.value, partition: partitionOfKey(key, target), headers: m.headers }];
    });
    // Written again before the offsets move: a crash in between repeats requests, never loses one.
    if (requestMessages.length > 0) await producer.send({ topic: internal.requests, acks: -1, messages: requestMessages });
    if (passed.length > 0) await admin.setOffsets({ groupId: fetcherGroupId(prefix), topic: internal.requests, partitions: passed });
    progress(`${internal.requests}: moved ${requestMessages.length} pending request(s) to their partitions of ${target}`);
    return { partitions: target, grown, headsMoved, requestsMoved: requestMessages.length };
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
}

async function partitionCounts(admin: Admin, topics: string[]): Promise<Map<string, number>> {
  const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
  return new Map(topics.map((t) => [t, metadata.find((m) => m.name === t)?.partitions.length ?? 0]));
}

/** A head's version (head-store's format); a record that is not one sorts last. */
function versionOf(value: Buffer): number {
  try {
    const v = (JSON.parse(value.toString('utf8')) as { version?: unknown }).version;
    return typeof v === 'number' ? v : -1;
  } catch {
    return -1;
  }
}
