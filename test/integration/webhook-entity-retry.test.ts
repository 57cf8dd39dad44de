import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { createRegistry, schemasDir } from '../../src/registry/registry.js';
import { startSink } from '../../src/sink/sink.js';
import { WEBHOOK_SCHEMA_FILE } from '../../src/wire/schemas.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { pipelineTopicSpecs, topicNames } from '../../src/wire/topics.js';
import { startIngress, type RunningIngress } from '../../src/ingress/ingress.js';
import { createMetrics } from '../../src/metrics.js';
import { startRecordingReceiver } from '../../src/simulator/recording-receiver.js';
import { startSimulator } from '../../src/simulator/simulator.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';

// The service sends `EntityId` in every payload and `X-Retry-Count: n` on a repeat
// (docs/CONTRACT.md section 3); webhook_events keeps both per event (migration 0013).
const config = testConfig();
const log = createLogger(config.logLevel);
const names = topicNames(config.topicPrefix);
const registry = createRegistry(config.schemaRegistryUrl);
let kafka: Kafka;
let pool: pg.Pool;
let ingress: RunningIngress;
const table = `${quoteIdent(config.databaseSchema)}.webhook_events`;
beforeAll(async () => {
  pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'webhook-entity-test', log });
  kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'webhook-entity-test', log });
  await migrate(pool, { schema: config.databaseSchema, log });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, Object.values(pipelineTopicSpecs(names)));
  await admin.disconnect();
});
afterAll(async () => {
  await ingress?.stop();
  await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(config.databaseSchema)} CASCADE`);
  await pool.end();
});

/** schemas/webhook.avsc as it was before entity_id and retry_count: what older records were written with. */
function olderWebhookSchema(): string {
  const schema = JSON.parse(readFileSync(join(schemasDir, WEBHOOK_SCHEMA_FILE), 'utf8')) as { fields: { name: string }[] };
  return JSON.stringify({ ...schema, fields: schema.fields.filter((f) => f.name !== 'entity_id' && f.name !== 'retry_count') });
}

const post = (body: object, headers: Record<string, string> = {}) => fetch(`${ingress.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('EntityId and X-Retry-Count per event', () => {
  it('the sandbox marks each repeat of a failed delivery with X-Retry-Count: n', async () => {
    const receiver = await startRecordingReceiver((_req, i) => ({ status: i < 2 ? 500 : 200 }));
    const sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, webhookUrl: receiver.url, delivery: { retryBaseDelayMs: 10 } });
    try {
      sim.emit({ Event: 'ContractChanged', ContractId: '5f0000000000000000000001', EntityId: 'entity-1' });
      await waitFor(() => receiver.received.length === 3, { what: 'three attempts' });
      expect(receiver.received.map((r) => r.retryCount)).toEqual([undefined, '1', '2']);
    } finally {
      await sim.stop();
      await receiver.stop();
    }
  });

  it('stores the EntityId and the X-Retry-Count of each delivery; a record of the older schema gets NULLs', async () => {
    // Written with the schema that had neither field, before the ingress registers the current one.
    const olderId = await registry.register(`${names.webhooks}-value`, olderWebhookSchema());
    const body = JSON.stringify({ Event: 'ContractChanged', ContractId: 'c-old', EntityId: 'entity-in-body-only' });
    const nulls = Object.fromEntries((JSON.parse(olderWebhookSchema()) as { fields: { name: string; default?: unknown }[] }).fields.filter((f) => 'default' in f).map((f) => [f.name, null]));
    const older = await registry.encode(olderId, { ...nulls, event_id: randomUUID(), event: 'ContractChanged', received_at: Date.now(), body, contract_id: 'c-old', extra_fields: '{"EntityId":"entity-in-body-only"}' });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner });
    await producer.connect();
    await producer.send({ topic: names.webhooks, acks: -1, messages: [{ key: 'Contract:c-old', value: older }] });
    await producer.disconnect();
    ingress = await startIngress({ log, kafka, registry, health: createHealth(), metrics: createMetrics() }, { ...config, ingressPort: 0, host: '127.0.0.1' });
    expect((await post({ Event: 'ContractChanged', ContractId: 'c-1', EntityId: 'entity-A' })).status).toBe(200);
    expect((await post({ Event: 'ContractChanged', ContractId: 'c-2', EntityId: 'entity-B' }, { 'X-Retry-Count': '3' })).status).toBe(200);
    // A header that is no count is kept out, never a reason to refuse.
    expect((await post({ Event: 'ContractChanged', ContractId: 'c-3' }, { 'X-Retry-Count': 'soon' })).status).toBe(200);
    // An EntityId that is not a string stays in the payload only.
    expect((await post({ Event: 'ContractChanged', ContractId: 'c-4', EntityId: 42 })).status).toBe(200);

    const sink = await startSink({ log, metrics: createMetrics(), health: createHealth() }, config);
    try {
      await waitFor(async () => (await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n === 5, { what: 'five webhooks stored' });
      const { rows } = await pool.query(`SELECT payload->>'ContractId' AS contract, entity_id, retry_count FROM ${table} ORDER BY 1`);
      expect(rows).toEqual([
        { contract: 'c-1', entity_id: 'entity-A', retry_count: null },
        { contract: 'c-2', entity_id: 'entity-B', retry_count: 3 },
        { contract: 'c-3', entity_id: null, retry_count: null },
        { contract: 'c-4', entity_id: null, retry_count: null },
        { contract: 'c-old', entity_id: null, retry_count: null },
      ]);
    } finally {
      await sink.stop();
    }
  });
});
