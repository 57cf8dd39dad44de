import type { Kafka } from 'kafkajs';
import type { BillingApiClient } from '../billing-api/client.js';
import type { ResourceType } from '../billing-api/resource-types.js';
import { backfillProgressTopic, backfillProgressTopicSpec, enricherTopicSpecs, enricherTopics } from '../wire/topics.js';
import { encodeFetchRequest } from '../wire/fetch-request.js';
import { createIdempotentProducer } from '../kafka/producers.js';
import { readToEnd } from '../kafka/read-to-end.js';
import { ensureTopics } from '../kafka/topics.js';
import type { Logger } from '../log.js';

export interface BackfillDeps {
  kafka: Kafka;
  api: Pick<BillingApiClient, 'listResources'>;
  log: Logger;
  /** Human progress lines (the CLI prints them on stderr). */
  progress?: (line: string) => void;
}

export interface BackfillOptions {
  topicPrefix: string;
  /** Partitions of the enricher's topics when backfill creates them (TOPIC_PARTITIONS). */
  topicPartitions?: number;
  types: ResourceType[];
  /** Start every type from the first page, ignoring saved progress. Default false. */
  restart?: boolean;
  pageSize?: number;
  signal?: AbortSignal;
}

export interface BackfillResult {
  /** Objects sent into the versioning path, per type. */
  objects: Partial<Record<ResourceType, number>>;
  /** List items without an identifier (skipped, logged). */
  withoutId: number;
}

interface Progress {
  nextSkip: number;
  done: boolean;
}

/**
 * Snapshots every existing object of the given types through the enricher's own versioning
 * path: each list item becomes a fetch request carrying the body as listed (no webhook behind
 * it, so source_event is null), keyed by resource like any other. The fetcher versions the
 * listed body only for an object it has no version of; for any other it reads the object (a
 * page may be older than its latest version), so a second backfill creates nothing new.
 * Progress is saved after each page is acknowledged; a rerun resumes an unfinished type.
 */
export async function runBackfill(deps: BackfillDeps, options: BackfillOptions): Promise<BackfillResult> {
  const progressTopic = backfillProgressTopic(options.topicPrefix);
  const internal = enricherTopics(options.topicPrefix);
  const admin = deps.kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, [...enricherTopicSpecs(internal, options.topicPartitions), backfillProgressTopicSpec(progressTopic)]);
  } finally {
    await admin.disconnect();
  }
  const saved = new Map<string, Progress>();
  await readToEnd(deps.kafka, progressTopic, (_p, m) => {
    if (m.key && m.value) saved.set(m.key.toString(), JSON.parse(m.value.toString()) as Progress);
  });

  const producer = createIdempotentProducer(deps.kafka);
  await producer.connect();
  const result: BackfillResult = { objects: {}, withoutId: 0 };
  try {
    for (const type of options.types) {
      const previous = saved.get(type);
      let skip = !options.restart && previous && !previous.done ? previous.nextSkip : 0;
      if (skip > 0) deps.progress?.(`backfill: ${type}: resuming at item ${skip}`);
      let count = 0;
      for (;;) {
        if (options.signal?.aborted) return result;
        // A page shows each object as it was at some moment of its request; the start is the
        // earliest such moment, so a version from it never claims a later observation than it is.
        const fetchedAt = Date.now();
        const page = await deps.api.listResources(type, { skip, ...(options.pageSize ? { take: options.pageSize } : {}) }, options.signal ? { signal: options.signal } : {});
        const messages = page.items.flatMap((body) => {
          const id = idOf(body);
          if (id === undefined) {
            result.withoutId++;
            deps.log.warn('backfill item without an identifier, skipped', { resourceType: type, skip });
            return [];
          }
          return [encodeFetchRequest({ type, id, eventId: null, event: null, receivedAt: fetchedAt, source: null, prefetched: { body, fetchedAt } })];
        });
        if (messages.length > 0) await producer.send({ topic: internal.requests, acks: -1, messages });
        count += messages.length;
        const done = page.nextSkip === undefined;
        skip = page.nextSkip ?? skip + page.items.length;
        await producer.send({ topic: progressTopic, acks: -1, messages: [{ key: type, value: JSON.stringify({ nextSkip: skip, done } satisfies Progress) }] });
        deps.progress?.(`backfill: ${type}: ${count} objects${done ? ', done' : ''}`);
        if (done) break;
      }
      result.objects[type] = count;
    }
    return result;
  } finally {
    await producer.disconnect();
  }
}

/** The object's identifier: its `Id` property in any letter case (spec 9.3). An assumption: the spec shows no resource fields. */
function idOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    for (const [k, v] of Object.entries(parsed)) if (k.toLowerCase() === 'id' && typeof v === 'string' && v !== '') return v;
  } catch {
    // not JSON: no identifier
  }
  return undefined;
}
