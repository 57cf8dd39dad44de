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
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
});

describe('metric facts: the fields the metric views read, kept per version by the database', () => {
  it('a version appended as the writer role gets its facts row, the same whatever the letter case of its keys', async () => {
    const pascal = { Id: 'c-1', PlanId: 'p-1', StartDate: '2025-01-01T00:00:00Z', LifecycleStatus: 'Active', Phases: [{ Type: 'Trial' }], Name: 'not a fact' };
    const camel = { id: 'c-2', planId: 'p-1', startDate: '2025-01-01T00:00:00Z', lifecycleStatus: 'Active', phases: [{ Type: 'Trial' }], name: 'not a fact' };
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL ROLE ${WRITER_ROLE}`);
      await client.query(
        `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset)
         VALUES ('Contract', 'c-1', 1, now(), false, $1, 'h1', '{}', '{}', 0, 0), ('Contract', 'c-2', 1, now(), false, $2, 'h2', '{}', '{}', 0, 1),
                ('Customer', 'k-1', 1, now(), false, '{"Id":"k-1"}', 'h3', '{}', '{}', 0, 2)`,
        [JSON.stringify(pascal), JSON.stringify(camel)],
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const { rows } = await pool.query(`SELECT resource_type, resource_id, version, fields FROM ${s}.metric_facts ORDER BY resource_id`);
    const fields = { planid: 'p-1', startdate: '2025-01-01T00:00:00Z', lifecyclestatus: 'Active', phases: [{ Type: 'Trial' }] };
    expect(rows).toEqual([
      { resource_type: 'Contract', resource_id: 'c-1', version: '1', fields },
      { resource_type: 'Contract', resource_id: 'c-2', version: '1', fields },
    ]);
  });
});
