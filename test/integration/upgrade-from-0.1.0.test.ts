import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, migrationsDir } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import type { Running } from '../../src/lifecycle.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { packageRoot } from '../../src/package-root.js';
import { createRegistry } from '../../src/registry/registry.js';
import { startSink } from '../../src/sink/sink.js';
import { SNAPSHOT_SCHEMA_FILE, WEBHOOK_SCHEMA_FILE, valueSubject } from '../../src/wire/schemas.js';
import { enricherTopics, pipelineTopicSpecs, topicNames } from '../../src/wire/topics.js';
import { appendVersions } from '../helpers/append-versions.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * An upgrade from release 0.1.0: its warehouse (migrations up to 0011, with that release's typed
 * columns and metric views) and its topics (records framed with its Avro schemas, kept in
 * test/fixtures/release-0.1.0/schemas as they were in schemas/ then; heads in its JSON format) are
 * taken over by this release's migrate, sink and enricher, and every version is kept.
 */
const release = join(packageRoot, 'test', 'fixtures', 'release-0.1.0');
const releaseSchema = (file: string) => readFile(join(release, 'schemas', file), 'utf8');
const log = createLogger('warn');
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A webhook record as the 0.1.0 ingress wrote it: its schema's fields, no entity_id or retry_count. */
function webhookOf010(event: string, contractId: string, receivedAt: number) {
  const body = JSON.stringify({ Event: event, ContractId: contractId });
  const ids = ['customer_id', 'order_id', 'invoice_id', 'old_invoice_id', 'new_invoice_id', 'old_invoice_draft_id', 'new_invoice_draft_id', 'dunning_id', 'payment_transaction_id', 'payment_escalation_process_id', 'your_customer_id', 'payment_provider', 'expiry_date', 'due_date', 'trigger_days'];
  return { event_id: randomUUID(), event, received_at: receivedAt, body, contract_id: contractId, ...Object.fromEntries(ids.map((f) => [f, null])), extra_fields: '{}' };
}

function snapshotOf(type: string, id: string, version: number, body: object, eventId: string) {
  const text = JSON.stringify(body);
  return { resource_type: type, resource_id: id, version, fetched_at: Date.UTC(2026, 10, 20) + version * 60_000, deleted: false, content_hash: `h-${id}-${version}`, body: text, source_event_ids: [eventId], source_events: ['ContractChanged'], sources: [] };
}

describe('upgrade from 0.1.0', () => {
  it("the sink writes 0.1.0's records and this release's into the migrated 0.1.0 warehouse: every version once, history kept", async () => {
    const config = testConfig();
    const names = topicNames(config.topicPrefix);
    const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test-upgrade', log });
    cleanups.push(() => pool.end(), () => pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(config.databaseSchema)} CASCADE`));
    const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test-upgrade', log });
    const registry = createRegistry(config.schemaRegistryUrl);

    // The 0.1.0 warehouse, with history its sink had written.
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    for (const name of await readdir(migrationsDir)) if (name < '0012') await cp(join(migrationsDir, name), join(dir, name));
    await migrate(pool, { schema: config.databaseSchema, log, dir, typedColumnsFile: join(release, 'typed-columns.json'), metricViewsFile: join(release, 'metric-views.sql') });
    const old = `old-${uniqueSuffix()}`;
    await appendVersions(pool, config.databaseSchema, [1, 2, 3].map((version) => ({ type: 'Contract', id: old, version, at: `2026-11-0${version}T00:00:00Z`, body: { Id: old, CustomerId: 'cu-old', PlanId: `p${version}` } })));

    // Its topics: the subjects' first schemas are 0.1.0's, and its records are framed with them.
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, Object.values(pipelineTopicSpecs(names)));
    await admin.disconnect();
    const webhookId010 = await registry.register(valueSubject(names.webhooks), await releaseSchema(WEBHOOK_SCHEMA_FILE));
    const snapshotId010 = await registry.register(valueSubject(names.snapshots), await releaseSchema(SNAPSHOT_SCHEMA_FILE));
    const letterId010 = await registry.register(valueSubject(names.snapshotsDlq), await releaseSchema('dead-letter.avsc'));
    const id = `c-${uniqueSuffix()}`;
    const webhooks010 = [webhookOf010('ContractCreated', id, Date.UTC(2026, 10, 20)), webhookOf010('ContractChanged', id, Date.UTC(2026, 10, 21))];
    const snapshots010 = [1, 2].map((v) => snapshotOf('Contract', id, v, { Id: id, CustomerId: 'cu', PlanId: `p${v}` }, webhooks010[v - 1]?.event_id ?? ''));
    const producer = kafka.producer({ createPartitioner: defaultPartitioner });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    await producer.send({ topic: names.webhooks, acks: -1, messages: await Promise.all(webhooks010.map(async (w) => ({ key: `Contract:${id}`, value: await registry.encode(webhookId010, w) }))) });
    await producer.send({ topic: names.snapshots, acks: -1, messages: await Promise.all(snapshots010.map(async (s) => ({ key: `Contract:${id}`, value: await registry.encode(snapshotId010, s) }))) });
    const letter = { source_topic: names.snapshots, source_partition: 0, source_offset: 7, source_key: Buffer.from('Contract:x'), source_value: Buffer.from('not avro'), stage: 'sink', error_class: 'decode', error_message: 'written by 0.1.0', failed_at: Date.UTC(2026, 10, 21) };
    await producer.send({ topic: names.snapshotsDlq, acks: -1, messages: [{ key: 'Contract:x', value: await registry.encode(letterId010, letter) }] });

    // This release: migrate, then its own schemas registered over 0.1.0's (the registry's compatibility rule applies), then its records.
    await migrate(pool, { schema: config.databaseSchema, log });
    // BACKWARD: a consumer of the new schema reads what the old one wrote (the rule readers-first upgrades rely on).
    for (const topic of [names.webhooks, names.snapshots]) await registry.setCompatibility(valueSubject(topic), 'BACKWARD');
    const webhookId = await registry.registerFile(valueSubject(names.webhooks), WEBHOOK_SCHEMA_FILE);
    const snapshotId = await registry.registerFile(valueSubject(names.snapshots), SNAPSHOT_SCHEMA_FILE);
    const current = { ...webhookOf010('ContractChanged', id, Date.UTC(2026, 10, 22)), entity_id: id, retry_count: 2 };
    await producer.send({ topic: names.webhooks, acks: -1, messages: [{ key: `Contract:${id}`, value: await registry.encode(webhookId, current) }] });
    await producer.send({ topic: names.snapshots, acks: -1, messages: [{ key: `Contract:${id}`, value: await registry.encode(snapshotId, snapshotOf('Contract', id, 3, { Id: id, CustomerId: 'cu', PlanId: 'p3' }, current.event_id)) }] });

    const sink: Running = await startSink({ log, metrics: createMetrics(), health: createHealth() }, config);
    cleanups.push(() => sink.stop());
    const s = quoteIdent(config.databaseSchema);
    const versions = async () => (await pool.query<{ resource_id: string; version: number }>(`SELECT resource_id, version FROM ${s}.resource_versions ORDER BY resource_id, version`)).rows;
    await waitFor(async () => (await versions()).length === 6 && (await pool.query(`SELECT 1 FROM ${s}.webhook_events`)).rowCount === 3 && (await pool.query(`SELECT 1 FROM ${s}.dead_letters`)).rowCount === 1, { timeoutMs: 60_000, what: 'the sink wrote both releases\' records' });
    expect(await versions()).toEqual([...[1, 2, 3].map((version) => ({ resource_id: id, version })), ...[1, 2, 3].map((version) => ({ resource_id: old, version }))].sort((a, b) => a.resource_id.localeCompare(b.resource_id) || a.version - b.version));
    const events = await pool.query(`SELECT event_id::text, entity_id, retry_count FROM ${s}.webhook_events ORDER BY received_at`);
    expect(events.rows).toEqual([...webhooks010.map((w) => ({ event_id: w.event_id, entity_id: null, retry_count: null })), { event_id: current.event_id, entity_id: id, retry_count: 2 }]);
    const letters = await pool.query(`SELECT stage, error_class, error_message, source_topic, source_offset::int FROM ${s}.dead_letters`);
    expect(letters.rows).toEqual([{ stage: 'sink', error_class: 'decode', error_message: 'written by 0.1.0', source_topic: names.snapshots, source_offset: 7 }]);
    const heads = await pool.query(`SELECT resource_id, plan_id FROM ${s}.contract_current ORDER BY resource_id`);
    expect(heads.rows).toEqual([{ resource_id: id, plan_id: 'p3' }, { resource_id: old, plan_id: 'p3' }].sort((a, b) => a.resource_id.localeCompare(b.resource_id)));
  });

  it('the enricher numbers on from the heads 0.1.0 wrote, and routes the webhooks it framed', async () => {
    const prefix = `test_${uniqueSuffix()}`;
    const registry = createRegistry(testConfig().schemaRegistryUrl);
    const webhookId010 = await registry.register(valueSubject(topicNames(prefix).webhooks), await releaseSchema(WEBHOOK_SCHEMA_FILE));
    const h: EnricherHarness = await startEnricherHarness({ env: { TOPIC_PREFIX: prefix } });
    cleanups.push(() => h.stop());
    // A contract the service has, and no webhook of it delivered yet.
    h.sim.setWebhookUrl(undefined);
    const { contractId } = h.sim.billing.signup();
    await h.stopEnrichers();

    // What 0.1.0 left: the contract's head at version 4 (its JSON format, byte for byte), and a webhook of it waiting to be routed.
    const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'test-upgrade-enricher', log });
    const producer = kafka.producer({ createPartitioner: defaultPartitioner });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    const key = `Contract:${contractId}`;
    const head010 = `{"v":1,"version":4,"contentHash":"written-by-0.1.0","deleted":false,"fetchedAt":${Date.UTC(2026, 10, 20)}}`;
    await producer.send({ topic: enricherTopics(prefix).heads, acks: -1, messages: [{ key, value: Buffer.from(head010) }] });
    await producer.send({ topic: topicNames(prefix).webhooks, acks: -1, messages: [{ key, value: await registry.encode(webhookId010, webhookOf010('ContractChanged', contractId, Date.now())) }] });

    // This release's enricher, from a fresh state directory: its heads come from the topic.
    const stateDir = await mkdtemp(join(tmpdir(), 'enricher-state-'));
    cleanups.push(() => rm(stateDir, { recursive: true, force: true }));
    await h.restartEnricher({ stateDir });
    await waitFor(() => h.versionsOf('Contract', contractId).length > 0, { timeoutMs: 60_000, what: 'the contract versioned' });
    await h.flushEnricher();
    expect(h.versionsOf('Contract', contractId).map((v) => v.version)).toEqual([5]);
    expect(h.deadLetters).toEqual([]);
  });
});
