import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { migrate, migrationsDir } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createKafka, defaultPartitioner } from '../../src/kafka/client.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/registry/registry.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';

const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'test', log });
const registry = createRegistry(config.schemaRegistryUrl);

afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(config.databaseSchema)} CASCADE`);
  await pool.end();
});

const recordSchema = (name: string, extraFields: object[] = []) =>
  JSON.stringify({
    type: 'record',
    name,
    namespace: 'test.billing',
    fields: [{ name: 'event_id', type: 'string' }, { name: 'event', type: 'string' }, { name: 'received_at', type: 'long' }, { name: 'payload', type: 'string' }, ...extraFields],
  });

describe('foundation: registry, Kafka and PostgreSQL, all real', () => {
  it('registers a schema, produces to a fresh topic, consumes and decodes, and writes into a migrated table', async () => {
    const topic = `${config.topicPrefix}.roundtrip`;
    const admin = kafka.admin();
    await admin.connect();
    await ensureTopics(admin, [{ topic, numPartitions: 2 }]);
    await admin.disconnect();

    const schemaId = await registry.register(`${topic}-value`, recordSchema('Webhook'));
    const sent = { event_id: randomUUID(), event: 'ContractChanged', received_at: Date.now(), payload: JSON.stringify({ Event: 'ContractChanged', ContractId: 'c-1' }) };
    const encoded = await registry.encode(schemaId, sent);
    expect(encoded[0]).toBe(0); // Confluent wire format: magic byte, then the 4-byte schema id
    expect(encoded.readInt32BE(1)).toBe(schemaId);

    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner });
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: 'c-1', value: encoded }] });
    await producer.disconnect();

    const result = await migrate(pool, { schema: config.databaseSchema, log });
    expect(result.applied).toContain('0001_webhook_events.sql');

    const consumer = kafka.consumer({ groupId: `test-${uniqueSuffix()}` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received: unknown[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        const value = (await registry.decode(message.value as Buffer)) as typeof sent;
        await pool.query(`INSERT INTO ${quoteIdent(config.databaseSchema)}.webhook_events (event_id, event, received_at, payload) VALUES ($1, $2, to_timestamp($3 / 1000.0), $4)`, [
          value.event_id,
          value.event,
          value.received_at,
          value.payload,
        ]);
        received.push(value);
      },
    });
    await waitFor(() => received.length === 1, { what: 'record consumed' });
    await consumer.disconnect();

    expect(received[0]).toEqual(sent);
    const { rows } = await pool.query(`SELECT event_id, event, payload FROM ${quoteIdent(config.databaseSchema)}.webhook_events`);
    expect(rows).toEqual([{ event_id: sent.event_id, event: 'ContractChanged', payload: { Event: 'ContractChanged', ContractId: 'c-1' } }]);
  });

  it('accepts a second schema version that adds an optional field, and rejects an incompatible one', async () => {
    const subject = `${config.topicPrefix}.evolution-value`;
    const v1 = await registry.register(subject, recordSchema('Evolving'));
    const v2 = await registry.register(subject, recordSchema('Evolving', [{ name: 'source', type: ['null', 'string'], default: null }]));
    expect(v2).not.toBe(v1);

    // A record written with v1 still decodes after v2 exists (ids are stable).
    const old = await registry.encode(v1, { event_id: 'e', event: 'X', received_at: 1, payload: '{}' });
    expect(await registry.decode(old)).toEqual({ event_id: 'e', event: 'X', received_at: 1, payload: '{}' });

    // A new required field without a default cannot read old data: BACKWARD forbids it.
    await expect(registry.register(subject, recordSchema('Evolving', [{ name: 'required_now', type: 'string' }]))).rejects.toMatchObject({
      retriable: false,
      context: { status: 409 },
    });
  });

  it('applies migrations once, even when two runs race, and refuses an edited migration', async () => {
    const schema = `test_${uniqueSuffix()}`;
    try {
      const [a, b] = await Promise.all([migrate(pool, { schema, log }), migrate(pool, { schema, log })]);
      const files = (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();
      // Each file applied exactly once between the two racing runs.
      expect([...a.applied, ...b.applied].sort()).toEqual(files);
      const again = await migrate(pool, { schema, log });
      expect(again.applied).toEqual([]);
      // A warehouse migrated by an earlier version recorded full-text checksums of the files as
      // they were then; only their comments have changed since.
      await pool.query(
        `UPDATE ${quoteIdent(schema)}.schema_migrations m SET checksum = e.checksum
           FROM (VALUES ('0001_webhook_events.sql', 'cd77492816f73146befeaebf45b12c6a23df1dcd460300b1abbf49f756028f11'),
                        ('0002_resource_versions.sql', 'b9772f13f089d34c015100c677aae317b87e86646ec2335686b34a018723d089'),
                        ('0003_loaded_at.sql', '5e438ac4691215bf764609f9397f43c66b6a842068345078c333187223ac292f')) AS e (name, checksum)
          WHERE m.name = e.name`,
      );
      expect((await migrate(pool, { schema, log })).applied).toEqual([]);
      await pool.query(`UPDATE ${quoteIdent(schema)}.schema_migrations SET checksum = 'edited'`);
      await expect(migrate(pool, { schema, log })).rejects.toThrow(/changed after it was applied/);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    }
  });
});
