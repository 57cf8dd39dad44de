import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { WRITER_ROLE } from '../../src/warehouse/resource-types.js';
import { testConfig } from '../helpers/environment.js';

const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const s = quoteIdent(config.databaseSchema);

beforeAll(async () => {
  await migrate(pool, { schema: config.databaseSchema, log });
  await pool.query(
    `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset)
     VALUES ('Dunning', 'd-1', 1, now(), false, '{"a":1}', 'h1', '{}', '{}', 0, 0)`,
  );
  await pool.query(`INSERT INTO ${s}.webhook_events VALUES (gen_random_uuid(), 'DunningCreated', now(), '{"Event":"DunningCreated"}')`);
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
});

describe('warehouse: history is append-only, enforced by the database', () => {
  const statements = (table: string) => [
    `UPDATE ${s}.${table} SET ${table === 'webhook_events' ? "event = 'x'" : "content_hash = 'x'"}`,
    `DELETE FROM ${s}.${table}`,
    `DELETE FROM ${s}.${table} WHERE false`,
    `TRUNCATE ${s}.${table}`,
  ];

  it.each(['resource_versions', 'webhook_events'])('rejects UPDATE, DELETE and TRUNCATE on %s, even for a superuser', async (table) => {
    for (const sql of statements(table)) {
      await expect(pool.query(sql), sql).rejects.toMatchObject({ code: '42501', message: expect.stringMatching(/append-only/) });
    }
    expect(Number((await pool.query(`SELECT count(*) FROM ${s}.${table}`)).rows[0].count)).toBe(1);
  });

  it('the writer role may append but not update or delete', async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
      await client.query(
        `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset)
         VALUES ('Dunning', 'd-1', 2, now(), false, '{"a":2}', 'h2', '{}', '{}', 0, 1)`,
      );
      await client.query('SAVEPOINT s');
      await expect(client.query(`UPDATE ${s}.resource_versions SET content_hash = 'x'`)).rejects.toMatchObject({ code: '42501' });
      await client.query('ROLLBACK TO SAVEPOINT s');
      await expect(client.query(`DELETE FROM ${s}.resource_versions`)).rejects.toMatchObject({ code: '42501' });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });
});
