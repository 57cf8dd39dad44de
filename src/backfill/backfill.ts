import type { Kafka } from 'kafkajs';
import { ApiRejectedError } from '../billing-api/api-errors.js';
import { DEFAULT_PAGE_SIZE, type BillingApiClient, type PageRequest, type ResourcePage } from '../billing-api/client.js';
import { RESOURCE_TYPE_INFO, type ResourceType } from '../billing-api/resource-types.js';
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
  /** Objects per list request, 1 to 500. Default 500 (the service's maximum). */
  pageSize?: number;
  signal?: AbortSignal;
}

export interface BackfillResult {
  /** Objects sent into the versioning path, per type. */
  objects: Partial<Record<ResourceType, number>>;
  /** List items without an identifier (skipped, logged). */
  withoutId: number;
  /** Types whose list could not be read to its end, with why (the other types still ran). */
  incomplete: { type: ResourceType; reason: string }[];
}

/**
 * Saved after each acknowledged page, per type. `cursor`: the id of the last object sent (the
 * next page starts there, `from` being inclusive); `nextSkip`: the skip of the next page, for a
 * type without a cursor. Progress saved by an older version holds only `nextSkip`; a cursor
 * type then starts again from the first page (objects listed twice create no version).
 */
interface Progress {
  cursor?: string;
  nextSkip?: number;
  done: boolean;
}

/** A list could not be read to its end (a repeated page, a refused skip): the type stops, the others go on. */
export class BackfillListError extends Error {}

/**
 * Snapshots every existing object of the given types through the enricher's own versioning
 * path: each list item becomes a fetch request carrying the body as listed (no webhook behind
 * it, so source_event is null), keyed by resource like any other. The fetcher versions the
 * listed body only for an object it has no version of; for any other it reads the object (a
 * page may be older than its latest version), so a second backfill creates nothing new.
 * Progress is saved after each page is acknowledged; a rerun resumes an unfinished type.
 *
 * Paging follows the service's documentation (docs/BILLING-API.md, assumption 5 "Paging"): a stable cursor
 * `from=<Id of the last object>` with `take`, the repeated object dropped, where the type has
 * one; `skip`/`take` otherwise (invoice drafts), stopping with an error when a page repeats one
 * already seen (the service's own client guards against that) or when the service refuses the
 * skip (it documents a limit of 1000).
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
  const result: BackfillResult = { objects: {}, withoutId: 0, incomplete: [] };
  const take = options.pageSize ?? DEFAULT_PAGE_SIZE;
  try {
    for (const type of options.types) {
      const paging = RESOURCE_TYPE_INFO[type].paging;
      if (paging === 'none') {
        result.incomplete.push({ type, reason: `no list endpoint is known for ${type}; it is read only on its events` });
        continue;
      }
      const previous = options.restart ? undefined : saved.get(type);
      const resume = previous && !previous.done ? previous : undefined;
      let cursor = paging === 'cursor' ? resume?.cursor : undefined;
      let skip = paging === 'skip' ? (resume?.nextSkip ?? 0) : 0;
      if (cursor !== undefined) deps.progress?.(`backfill: ${type}: resuming at ${cursor}`);
      else if (skip > 0) deps.progress?.(`backfill: ${type}: resuming at item ${skip}`);
      // Skip paging: the ids of this run, to notice a page that repeats instead of looping on it.
      const seen = new Set<string>();
      let count = 0;
      try {
        for (;;) {
          if (options.signal?.aborted) return result;
          // A page shows each object as it was at some moment of its request; the start is the
          // earliest such moment, so a version from it never claims a later observation than it is.
          const fetchedAt = Date.now();
          const page = await listPage(deps, type, paging === 'cursor' ? { ...(cursor !== undefined ? { from: cursor } : {}), take } : { skip, take }, options.signal);
          const listed = page.items.map((body) => ({ body, id: idOf(body) }));
          // `from` is inclusive: the object the cursor names comes again first; it was sent already.
          const fresh = cursor !== undefined ? listed.filter((item) => item.id !== cursor) : listed;
          if (paging === 'skip' && fresh.length > 0 && fresh.every((item) => item.id !== undefined && seen.has(item.id))) {
            throw new BackfillListError(`${type}: the page at skip ${skip} repeats objects already listed; the list cannot be read further with skip/take (${count} objects sent)`);
          }
          const messages = fresh.flatMap(({ body, id }) => {
            if (id === undefined) {
              result.withoutId++;
              deps.log.warn('backfill item without an identifier, skipped', { resourceType: type, ...(cursor !== undefined ? { cursor } : { skip }) });
              return [];
            }
            seen.add(id);
            return [encodeFetchRequest({ type, id, eventId: null, event: null, receivedAt: fetchedAt, source: null, prefetched: { body, fetchedAt } })];
          });
          if (messages.length > 0) await producer.send({ topic: internal.requests, acks: -1, messages });
          count += messages.length;
          const lastId = [...listed].reverse().find((item) => item.id !== undefined)?.id;
          // A full page whose last id is the cursor itself would be asked for again and again.
          if (paging === 'cursor' && !page.last && (lastId === undefined || lastId === cursor)) {
            throw new BackfillListError(`${type}: the page from ${cursor ?? 'the start'} does not move the cursor on (no new identifier on a full page); stopped rather than loop (${count} objects sent)`);
          }
          const done = page.last;
          if (paging === 'cursor') cursor = lastId ?? cursor;
          else skip += page.items.length;
          const saving: Progress = paging === 'cursor' ? { ...(cursor !== undefined ? { cursor } : {}), done } : { nextSkip: skip, done };
          await producer.send({ topic: progressTopic, acks: -1, messages: [{ key: type, value: JSON.stringify(saving) }] });
          deps.progress?.(`backfill: ${type}: ${count} objects${done ? ', done' : ''}`);
          if (done) break;
        }
      } catch (err) {
        if (!(err instanceof BackfillListError)) throw err;
        deps.log.error('backfill of a type stopped before its end', { resourceType: type, objects: count, err: err.message });
        result.incomplete.push({ type, reason: err.message });
      }
      result.objects[type] = count;
    }
    return result;
  } finally {
    await producer.disconnect();
  }
}

/** One page; a skip the service refuses (400, documented limit 1000) ends the type with a clear reason. */
async function listPage(deps: BackfillDeps, type: ResourceType, page: PageRequest, signal: AbortSignal | undefined): Promise<ResourcePage> {
  try {
    return await deps.api.listResources(type, page, signal ? { signal } : {});
  } catch (err) {
    if (err instanceof ApiRejectedError && page.skip !== undefined && page.skip > 0 && err.context.status === 400) {
      throw new BackfillListError(`${type}: the service refused skip=${page.skip} (HTTP 400; it documents skip as limited to 1000 and offers no cursor for this type); the rest arrives through its events`);
    }
    throw err;
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
