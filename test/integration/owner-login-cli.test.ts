import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createKafka } from '../../src/kafka/client.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { pipelineTopicSpecs, topicNames } from '../../src/wire/topics.js';
import { silentLogger } from '../../src/log.js';
import { WRITER_ROLE } from '../../src/warehouse/resource-types.js';
import { runCli } from '../helpers/cli.js';
import { uniqueSuffix } from '../helpers/environment.js';

/**
 * With DATABASE_URL naming a writer login (no DDL rights), the commands that change the schema
 * (`migrate`, `replay --rebuild`) take the owner's login from MIGRATE_DATABASE_URL.
 */
const services = inject('services');
const ownerUrl = services.DATABASE_URL;
const login = `test_writer_${uniqueSuffix()}`;
const schema = `test_${uniqueSuffix()}`;
const prefix = `test_${uniqueSuffix()}`;
const owner = createPool({ databaseUrl: ownerUrl, applicationName: 'test-owner', log: silentLogger, max: 1 });
const writerUrl = (() => {
  const url = new URL(ownerUrl);
  url.username = login;
  url.password = '';
  return url.toString();
})();
const env = { ...services, DATABASE_URL: writerUrl, MIGRATE_DATABASE_URL: ownerUrl, DATABASE_SCHEMA: schema, TOPIC_PREFIX: prefix, LOG_LEVEL: 'warn' };

beforeAll(async () => {
  await owner.query(`CREATE ROLE ${login} LOGIN`);
  const kafka = createKafka({ brokers: services.KAFKA_BROKERS.split(','), clientId: 'test-owner-login', log: silentLogger });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, Object.values(pipelineTopicSpecs(topicNames(prefix))));
  } finally {
    await admin.disconnect();
  }
});
afterAll(async () => {
  const { rows } = await owner.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE $1`, [`${schema}%`]);
  for (const { nspname } of rows) await owner.query(`DROP SCHEMA ${quoteIdent(nspname)} CASCADE`);
  await owner.query(`DROP ROLE IF EXISTS ${login}`);
  await owner.end();
});

describe('MIGRATE_DATABASE_URL: the owner login for DDL', () => {
  it('migrate creates the warehouse as the owner while DATABASE_URL is a writer login', async () => {
    const result = await runCli(['migrate'], env);
    expect(result.stderr).toContain('applied');
    expect(result.code).toBe(0);
    const { rows } = await owner.query(`SELECT tableowner FROM pg_tables WHERE schemaname = $1 AND tablename = 'resource_versions'`, [schema]);
    expect(rows).toEqual([{ tableowner: new URL(ownerUrl).username }]);
  });

  it('replay --rebuild builds and swaps in the fresh schema as the owner', async () => {
    await owner.query(`GRANT ${WRITER_ROLE} TO ${login}`);
    const result = await runCli(['replay', '--rebuild'], env);
    expect(result.stderr).toContain('rebuild: done');
    expect(result.code).toBe(0);
    const { rows } = await owner.query(`SELECT tableowner FROM pg_tables WHERE schemaname = $1 AND tablename = 'resource_versions'`, [schema]);
    expect(rows).toEqual([{ tableowner: new URL(ownerUrl).username }]);
  });
});
