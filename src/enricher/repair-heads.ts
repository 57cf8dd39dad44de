import type { Kafka, Message } from 'kafkajs';
import { customerReference } from '../billing-api/customer-reference.js';
import { UserError, classifyRegistryError } from '../errors.js';
import { createIdempotentProducer } from '../kafka/producers.js';
import { readToEnd } from '../kafka/read-to-end.js';
import { ensureTopics } from '../kafka/topics.js';
import type { Registry } from '../registry/registry.js';
import type { SnapshotRecord } from '../wire/snapshot-record.js';
import { enricherTopicSpecs, enricherTopics, topicNames } from '../wire/topics.js';
import { delayForwarderGroupId, enricherGroupId, fetcherGroupId } from './enricher.js';
import { decodeHead, encodeHead, isRestoreBarrier, type StoredHead } from './head-store.js';

export interface RepairHeadsReport {
  /** Resources in the snapshot log. */
  resources: number;
  /** Heads written: missing from the heads topic, or behind the log. */
  written: number;
  /** Heads the topic held at or past the log's latest version (left as they were). */
  current: number;
  /** Records of the snapshot log that do not decode (skipped, as the sink dead-letters them). */
  undecodable: number;
}

/** Records per produce request. */
const CHUNK = 500;

/** The head a snapshot record leaves: its version, content, deletion, fetch time and, for a contract, the customer it names. */
function headOf(r: SnapshotRecord): StoredHead {
  let customerId: string | undefined;
  if (r.resource_type === 'Contract' && r.body !== null) {
    try {
      customerId = customerReference(JSON.parse(r.body));
    } catch {
      customerId = undefined;
    }
  }
  return { version: r.version, contentHash: r.content_hash, deleted: r.deleted, fetchedAt: Number(r.fetched_at), ...(customerId !== undefined ? { customerId } : {}) };
}

/**
 * Rebuilds the enricher's heads topic from the snapshot log, after it was lost or recreated:
 * without it the fetcher numbers every resource's versions from 1 again and the sink refuses
 * each as a version conflict. Each resource's head becomes its latest version in the log (its
 * content hash, deletion and fetch time; a contract's customer from its body); a head the topic
 * already holds at or past that version stays. The topic is created when missing, with the
 * requests topic's partition count (they are co-partitioned). Refuses while an enricher runs:
 * its own head writes would race these. A contract's escalation processes are not in the log:
 * the next PaymentEscalationReset reads them again.
 */
export async function repairHeads(deps: { kafka: Kafka; registry: Registry; prefix: string; dryRun?: boolean; progress?: (line: string) => void }): Promise<RepairHeadsReport> {
  const { kafka, prefix } = deps;
  const internal = enricherTopics(prefix);
  const snapshots = topicNames(prefix).snapshots;
  const admin = kafka.admin();
  await admin.connect();
  let headsExist = false;
  try {
    const { groups } = await admin.describeGroups([enricherGroupId(prefix), fetcherGroupId(prefix), delayForwarderGroupId(prefix)]);
    const running = groups.filter((g) => g.members.length > 0).map((g) => g.groupId);
    if (running.length > 0) throw new UserError(`consumer group(s) ${running.join(', ')} have active members; stop the enricher first, then run repair heads again`);
    const existing = new Set(await admin.listTopics());
    if (!existing.has(snapshots)) throw new UserError(`${snapshots} does not exist: there is no snapshot log to repair the heads from`);
    if (!existing.has(internal.requests)) throw new UserError(`${internal.requests} does not exist: start the enricher once to create its topics`);
    const partitions = (await admin.fetchTopicOffsets(internal.requests)).length;
    headsExist = existing.has(internal.heads);
    if (headsExist) {
      const headPartitions = (await admin.fetchTopicOffsets(internal.heads)).length;
      if (headPartitions !== partitions) throw new UserError(`${internal.heads} has ${headPartitions} partitions and ${internal.requests} ${partitions}; make them equal first (billing-loader repartition)`);
    } else if (!deps.dryRun) {
      const spec = enricherTopicSpecs(internal, partitions).find((s) => s.topic === internal.heads);
      if (spec) await ensureTopics(admin, [spec]);
      deps.progress?.(`repair heads: created ${internal.heads} with ${partitions} partitions`);
    }
  } finally {
    await admin.disconnect();
  }

  const heads = new Map<string, number>();
  if (headsExist) {
    await readToEnd(kafka, internal.heads, (_p, m) => {
      const key = m.key?.toString();
      if (key === undefined || isRestoreBarrier(key) || !m.value) return;
      heads.set(key, decodeHead(m.value).version);
    });
  }
  deps.progress?.(`repair heads: ${heads.size} head(s) in ${internal.heads}; reading ${snapshots}`);

  const latest = new Map<string, SnapshotRecord>();
  const report: RepairHeadsReport = { resources: 0, written: 0, current: 0, undecodable: 0 };
  const values: Buffer[] = [];
  await readToEnd(kafka, snapshots, (_p, m) => {
    if (m.value) values.push(m.value);
  }, undefined, {
    afterBatch: async () => {
      for (const v of values.splice(0)) {
        let r: SnapshotRecord;
        try {
          r = (await deps.registry.decode(v)) as SnapshotRecord;
        } catch (err) {
          // A record the sink dead-letters as undecodable is no version; the registry being down is an error.
          if (classifyRegistryError(err, v) !== 'bad-record') throw err;
          report.undecodable++;
          continue;
        }
        const key = `${r.resource_type}:${r.resource_id}`;
        if ((latest.get(key)?.version ?? 0) < r.version) latest.set(key, r);
      }
    },
  });

  const due: Message[] = [];
  for (const [key, r] of latest) if ((heads.get(key) ?? 0) < r.version) due.push({ key, value: encodeHead(headOf(r)) });
  Object.assign(report, { resources: latest.size, written: due.length, current: latest.size - due.length });
  if (deps.dryRun || due.length === 0) return report;
  const producer = createIdempotentProducer(kafka);
  await producer.connect();
  try {
    for (let i = 0; i < due.length; i += CHUNK) await producer.send({ topic: internal.heads, acks: -1, messages: due.slice(i, i + CHUNK) });
  } finally {
    await producer.disconnect();
  }
  return report;
}
