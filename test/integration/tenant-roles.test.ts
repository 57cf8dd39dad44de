import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAnalystPool } from '../../src/dashboard/analyst-pool.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createKafka } from '../../src/kafka/client.js';
import { ensureTopics } from '../../src/kafka/topics.js';
import { silentLogger } from '../../src/log.js';
import { pipelineTopicSpecs, topicNames } from '../../src/wire/topics.js';
import { warehouseRoles } from '../../src/warehouse/schema-roles.js';
import { ANALYST_ROLE, WRITER_ROLE } from '../../src/warehouse/resource-types.js';
import { runCli } from '../helpers/cli.js';
import { uniqueSuffix } from '../helpers/environment.js';

/**
 * Two tenants in one PostgreSQL cluster, each migrated with DATABASE_ROLES=schema: tenant A's
 * writer and analyst logins reach schema A only, and the cluster-wide roles no schema of theirs.
 * A through the CLI (the setting as an operator sets it), B through migrate() itself; then A is
 * migrated again, which recreates its views, and keeps them to A's roles.
 */
const services = inject('services');
const ownerUrl = services.DATABASE_URL;
const owner = createPool({ databaseUrl: ownerUrl, applicationName: 'test-tenants', log: silentLogger, max: 2 });
const a = `test_${uniqueSuffix()}`;
const b = `test_${uniqueSuffix()}`;
const rolesA = warehouseRoles('schema', a);
const rolesB = warehouseRoles('schema', b);
const c = `test_${uniqueSuffix()}`;
const shared = `test_${uniqueSuffix()}`;
const switched = `test_${uniqueSuffix()}`;
const rolesSwitched = warehouseRoles('schema', switched);
const rolesC = warehouseRoles('schema', c);
const logins = { writerA: `test_wa_${uniqueSuffix()}`, analystA: `test_aa_${uniqueSuffix()}`, writerB: `test_wb_${uniqueSuffix()}`, writerC: `test_wc_${uniqueSuffix()}`, shared: `test_ws_${uniqueSuffix()}` };
const clients: pg.Client[] = [];

/** A connection as `login` itself (not SET ROLE): what a tenant's deployment holds. */
async function connectAs(login: string): Promise<pg.Client> {
  const url = new URL(ownerUrl);
  url.username = login;
  url.password = '';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  clients.push(client);
  return client;
}

const contractVersion = (schema: string, id: string) =>
  `INSERT INTO ${quoteIdent(schema)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset)
   VALUES ('Contract', '${id}', 1, now(), false, '{"CustomerId":"cu"}', 'h', '{}', '{}', 'cu', 0, 0)`;
const webhook = (schema: string) => `INSERT INTO ${quoteIdent(schema)}.webhook_events VALUES (gen_random_uuid(), 'ContractCreated', now(), '{}')`;
const denied = { code: '42501' };

beforeAll(async () => {
  await migrate(owner, { schema: b, roles: rolesB, log: silentLogger });
  const cli = await runCli(['migrate'], { ...services, DATABASE_SCHEMA: a, DATABASE_ROLES: 'schema', LOG_LEVEL: 'warn' });
  expect(cli.stderr).toContain(`schema ${a}`);
  expect(cli.code).toBe(0);
  await migrate(owner, { schema: a, roles: rolesA, log: silentLogger });
  await owner.query(`CREATE ROLE ${logins.writerA} LOGIN IN ROLE ${rolesA.writer}`);
  await owner.query(`CREATE ROLE ${logins.analystA} LOGIN IN ROLE ${rolesA.analyst}`);
  await owner.query(`CREATE ROLE ${logins.writerB} LOGIN IN ROLE ${rolesB.writer}`);
  await owner.query(`CREATE ROLE ${logins.shared} LOGIN IN ROLE ${WRITER_ROLE}, ${ANALYST_ROLE}`);
});
afterAll(async () => {
  for (const c of clients) await c.end();
  // A rebuild leaves the replaced schema beside the live one (<schema>_replaced_<time>).
  const { rows } = await owner.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname = ANY($1) OR nspname LIKE $2`, [[a, b, shared, switched], `${c}%`]);
  for (const { nspname } of rows) await owner.query(`DROP SCHEMA ${quoteIdent(nspname)} CASCADE`);
  for (const role of [...Object.values(logins), rolesA.writer, rolesA.analyst, rolesB.writer, rolesB.analyst, rolesC.writer, rolesC.analyst, rolesSwitched.writer, rolesSwitched.analyst]) await owner.query(`DROP ROLE IF EXISTS ${role}`);
  await owner.end();
});

describe('DATABASE_ROLES=schema: one writer and one analyst role per warehouse schema', () => {
  it('names the roles after the schema, NOLOGIN', async () => {
    expect(rolesA).toEqual({ writer: `${a}_writer`, analyst: `${a}_analyst` });
    const { rows } = await owner.query(`SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname`, [[rolesA.writer, rolesA.analyst]]);
    expect(rows).toEqual([
      { rolname: rolesA.analyst, rolcanlogin: false },
      { rolname: rolesA.writer, rolcanlogin: false },
    ]);
  });

  it('gives the schema roles exactly what the cluster-wide roles hold on a schema migrated with DATABASE_ROLES=shared', async () => {
    await migrate(owner, { schema: shared, log: silentLogger });
    // Every privilege on the schema, its relations and its functions, by object name, of a role.
    const privileges = async (schema: string, role: string) =>
      (
        await owner.query<{ p: string }>(
          `SELECT 'schema ' || x.privilege_type AS p FROM pg_namespace n, aclexplode(n.nspacl) x WHERE n.nspname = $1 AND x.grantee = $2::regrole
           UNION ALL SELECT c.relname || ' ' || x.privilege_type FROM pg_class c, aclexplode(c.relacl) x WHERE c.relnamespace = $1::regnamespace AND x.grantee = $2::regrole
           UNION ALL SELECT p.proname || ' ' || x.privilege_type FROM pg_proc p, aclexplode(p.proacl) x WHERE p.pronamespace = $1::regnamespace AND x.grantee = $2::regrole
           ORDER BY 1`,
          [schema, role],
        )
      ).rows.map((r) => r.p);
    const sharedWriter = await privileges(shared, WRITER_ROLE);
    expect(sharedWriter).toContain('resource_versions INSERT');
    expect(await privileges(a, rolesA.writer)).toEqual(sharedWriter);
    const sharedAnalyst = await privileges(shared, ANALYST_ROLE);
    expect(sharedAnalyst).toContain('contract_current SELECT');
    expect(await privileges(a, rolesA.analyst)).toEqual(sharedAnalyst);
  });

  it("A's writer appends to A (the triggers' derived tables included) and cannot write or read B", async () => {
    const w = await connectAs(logins.writerA);
    await w.query(contractVersion(a, 'c-a'));
    await w.query(webhook(a));
    expect((await w.query(`SELECT resource_id FROM ${quoteIdent(a)}.resource_latest`)).rows).toEqual([{ resource_id: 'c-a' }]);
    await expect(w.query(contractVersion(b, 'c-x'))).rejects.toMatchObject(denied);
    await expect(w.query(webhook(b))).rejects.toMatchObject(denied);
    await expect(w.query(`SELECT * FROM ${quoteIdent(b)}.resource_latest`)).rejects.toMatchObject(denied);
    await expect(w.query(`DELETE FROM ${quoteIdent(a)}.resource_versions`)).rejects.toMatchObject(denied);
  });

  it("B's writer appends to B and cannot write A", async () => {
    const w = await connectAs(logins.writerB);
    await w.query(contractVersion(b, 'c-b'));
    await expect(w.query(contractVersion(a, 'c-y'))).rejects.toMatchObject(denied);
    const { rows } = await owner.query(`SELECT resource_id FROM ${quoteIdent(a)}.resource_versions UNION ALL SELECT resource_id FROM ${quoteIdent(b)}.resource_versions ORDER BY 1`);
    expect(rows).toEqual([{ resource_id: 'c-a' }, { resource_id: 'c-b' }]);
  });

  it("A's analyst reads A's views and functions, nothing of B, and writes nothing", async () => {
    const r = await connectAs(logins.analystA);
    expect((await r.query(`SELECT resource_id, customer_id FROM ${quoteIdent(a)}.contract_current`)).rows).toEqual([{ resource_id: 'c-a', customer_id: 'cu' }]);
    await r.query(`SELECT * FROM ${quoteIdent(a)}.contract_daily LIMIT 1`);
    await r.query(`SELECT * FROM ${quoteIdent(a)}.contract_counts_as_of(now())`);
    await r.query(`SELECT * FROM ${quoteIdent(a)}.webhook_events`);
    for (const relation of ['contract_current', 'contract_history', 'contract_daily', 'webhook_events', 'dead_letters']) {
      await expect(r.query(`SELECT * FROM ${quoteIdent(b)}.${relation}`), relation).rejects.toMatchObject(denied);
    }
    await expect(r.query(`SELECT * FROM ${quoteIdent(b)}.contract_counts_as_of(now())`)).rejects.toMatchObject(denied);
    await expect(r.query(webhook(a))).rejects.toMatchObject(denied);
    await expect(r.query(`SELECT * FROM ${quoteIdent(a)}.resource_versions`)).rejects.toMatchObject(denied);
  });

  it("the dashboard's pool, given A's analyst role, reads A and not B, whatever login it has", async () => {
    const pool = createAnalystPool({ databaseUrl: ownerUrl, analystRole: rolesA.analyst, log: silentLogger, max: 1 });
    try {
      expect((await pool.query('SELECT current_user AS who')).rows).toEqual([{ who: rolesA.analyst }]);
      expect((await pool.query(`SELECT resource_id FROM ${quoteIdent(a)}.contract_current`)).rows).toEqual([{ resource_id: 'c-a' }]);
      await expect(pool.query(`SELECT * FROM ${quoteIdent(b)}.contract_current`)).rejects.toMatchObject(denied);
    } finally {
      await pool.end();
    }
  });

  it('switching a warehouse migrated with the cluster-wide roles to its own is one migrate', async () => {
    await migrate(owner, { schema: switched, log: silentLogger });
    const holders = async () =>
      (
        await owner.query<{ rolname: string }>(
          `SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) x JOIN pg_roles r ON r.oid = x.grantee WHERE c.relnamespace = $1::regnamespace AND r.rolname <> current_user ORDER BY 1`,
          [switched],
        )
      ).rows.map((r) => r.rolname);
    expect(await holders()).toEqual([ANALYST_ROLE, WRITER_ROLE].sort());
    await migrate(owner, { schema: switched, roles: rolesSwitched, log: silentLogger });
    expect(await holders()).toEqual([rolesSwitched.analyst, rolesSwitched.writer].sort());
  });

  it('the cluster-wide roles hold nothing on either schema', async () => {
    const s = await connectAs(logins.shared);
    for (const schema of [a, b]) {
      await expect(s.query(contractVersion(schema, 'c-z')), schema).rejects.toMatchObject(denied);
      await expect(s.query(`SELECT * FROM ${quoteIdent(schema)}.contract_current`), schema).rejects.toMatchObject(denied);
    }
    const { rows } = await owner.query(
      `SELECT count(*)::int AS n FROM pg_class c, aclexplode(c.relacl) x
        WHERE c.relnamespace IN ($1::regnamespace, $2::regnamespace) AND x.grantee IN ($3::regrole, $4::regrole)`,
      [a, b, WRITER_ROLE, ANALYST_ROLE],
    );
    expect(rows).toEqual([{ n: 0 }]);
  });

  it('replay --rebuild gives the fresh schema the live schema\'s roles: after the swap the tenant\'s writer appends, the cluster-wide one cannot', async () => {
    const env = { ...services, DATABASE_SCHEMA: c, DATABASE_ROLES: 'schema', TOPIC_PREFIX: c, LOG_LEVEL: 'warn' };
    const kafka = createKafka({ brokers: services.KAFKA_BROKERS.split(','), clientId: 'test-tenants', log: silentLogger });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, Object.values(pipelineTopicSpecs(topicNames(c))));
    } finally {
      await admin.disconnect();
    }
    expect((await runCli(['migrate'], env)).code).toBe(0);
    const rebuilt = await runCli(['replay', '--rebuild'], env);
    expect(rebuilt.stderr).toContain('rebuild: swapped in');
    expect(rebuilt.code).toBe(0);
    await owner.query(`CREATE ROLE ${logins.writerC} LOGIN IN ROLE ${rolesC.writer}`);
    const w = await connectAs(logins.writerC);
    await w.query(contractVersion(c, 'c-c'));
    await expect(w.query(contractVersion(a, 'c-w'))).rejects.toMatchObject(denied);
    const s = await connectAs(logins.shared);
    await expect(s.query(contractVersion(c, 'c-s'))).rejects.toMatchObject(denied);
  });
});
