import { AclOperationTypes as Op, AclPermissionTypes, AclResourceTypes as Res, ResourcePatternTypes as Pattern, type Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { secureKafkaAccess, type SecureKafkaAccess } from '../../src/stack/kafka-service.js';
import { freePort } from '../helpers/free-port.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from '../faults/private-services.js';
import { quoteIdent } from '../../src/db/pool.js';
import { createDeadLetterWriter } from '../../src/kafka/dead-letters.js';
import { deadLetterFor } from '../../src/wire/dead-letter.js';
import { runCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait-for.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { drainPipeline } from '../helpers/pipeline-drain.js';
import { startSimulatedPipeline } from '../helpers/simulated-pipeline.js';
import { compareWarehouseToTruth } from '../helpers/warehouse-truth.js';

/**
 * The ACLs docs/OPERATIONS.md ("Secured Kafka") lists for `billing-loader run` (ingress, enricher and sink),
 * granted to the loader's user on a broker that authorizes every request (StandardAuthorizer,
 * nothing allowed without an ACL): the pipeline works with exactly those.
 */
type Grant = [Res, string, Pattern, Op[]];

function runGrants(p: string): Grant[] {
  const { LITERAL, PREFIXED } = Pattern;
  return [
    // Topics: created at start when missing (Create), checked (Describe, DescribeConfigs), read and written.
    [Res.TOPIC, `${p}.webhooks`, LITERAL, [Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ, Op.WRITE]],
    [Res.TOPIC, `${p}.snapshots`, LITERAL, [Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ, Op.WRITE]],
    // Every writer reads the largest record each topic it writes accepts (DescribeConfigs).
    // The sink also reads both DLQs back, to record every letter in the warehouse.
    [Res.TOPIC, `${p}.webhooks.dlq`, LITERAL, [Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ, Op.WRITE]],
    [Res.TOPIC, `${p}.snapshots.dlq`, LITERAL, [Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ, Op.WRITE]],
    [Res.TOPIC, `${p}.enricher.requests`, LITERAL, [Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ, Op.WRITE]],
    [Res.TOPIC, `${p}.enricher.heads`, LITERAL, [Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ, Op.WRITE]],
    [Res.TOPIC, `${p}.enricher.delayed`, LITERAL, [Op.CREATE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ, Op.WRITE]],
    // Consumer groups: the stages' own, and the throwaway groups that read the heads back at start.
    [Res.GROUP, `${p}.enricher`, LITERAL, [Op.READ, Op.DESCRIBE]],
    [Res.GROUP, `${p}.enricher.fetcher`, LITERAL, [Op.READ, Op.DESCRIBE]],
    [Res.GROUP, `${p}.enricher.delayed`, LITERAL, [Op.READ, Op.DESCRIBE]],
    [Res.GROUP, `${p}.sink`, LITERAL, [Op.READ, Op.DESCRIBE]],
    [Res.GROUP, `${p}.sink.dead-letters`, LITERAL, [Op.READ, Op.DESCRIBE]],
    [Res.GROUP, `${p}.enricher.heads.read.`, PREFIXED, [Op.READ, Op.DESCRIBE, Op.DELETE]],
    // The fetcher's transactional producers, one per requests partition.
    [Res.TRANSACTIONAL_ID, `${p}.enricher.requests.fetcher.`, PREFIXED, [Op.WRITE, Op.DESCRIBE]],
  ];
}

let broker: PrivateService & { folder: string };
let access: SecureKafkaAccess;
let admin: ReturnType<Kafka['admin']>;

beforeAll(async () => {
  if (!nativeKafka) return;
  broker = await startPrivateKafka({ secure: true, acls: true });
  access = secureKafkaAccess(broker.folder) as SecureKafkaAccess;
  const kafka = createKafka({ brokers: [broker.address], clientId: 'acl-admin', log: silentLogger, ssl: { ca: await import('node:fs').then((fs) => fs.readFileSync(access.caFile)) }, sasl: { mechanism: 'scram-sha-512', ...access.admin } });
  admin = kafka.admin();
  await admin.connect();
}, 240_000);

afterAll(async () => {
  await admin?.disconnect();
  await broker?.dispose();
});

const grant = (principal: string, grants: Grant[]) =>
  admin.createAcls({
    acl: grants.flatMap(([resourceType, resourceName, resourcePatternType, operations]) =>
      operations.map((operation) => ({ resourceType, resourceName, resourcePatternType, operation, principal, host: '*', permissionType: AclPermissionTypes.ALLOW })),
    ),
  });

describe.skipIf(!nativeKafka)('Kafka ACLs of billing-loader run', () => {
  it('the pipeline runs with only the documented ACLs', async () => {
    const prefix = `acl_${uniqueSuffix()}`;
    await grant(`User:${access.loader.username}`, runGrants(prefix));
    const env = {
      KAFKA_BROKERS: broker.address, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: access.caFile, KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: access.loader.username, KAFKA_SASL_PASSWORD: access.loader.password, TOPIC_PREFIX: prefix,
    };
    const run = await startSimulatedPipeline({ name: 'kafka-acls-test', sim: { seed: 7 }, env });
    try {
      const scenario = await run.sim.runScenario({ name: 'default', customers: 6, stepDelayMs: 20 });
      expect(scenario.completed).toBe(true);
      await drainPipeline({ kafka: run.kafka, config: run.config, pool: run.pool, sim: run.sim, timeoutMs: 60_000 });
      const truth = await compareWarehouseToTruth(run.pool, run.config.databaseSchema, run.sim);
      expect(truth.problems).toEqual([]);
      expect(truth.objects).toBeGreaterThanOrEqual(run.sim.ids('Contract').length + run.sim.ids('Customer').length);
      // The sink reads the DLQs back into dead_letters with the same grants.
      const producer = run.kafka.producer();
      await producer.connect();
      await createDeadLetterWriter(producer, 'enricher', () => 1_000_000).send([deadLetterFor(`${prefix}.webhooks.dlq`, `${prefix}.enricher.requests`, 0, { offset: '0', key: null, value: null }, 'not-found', 'acl-probe')]);
      await producer.disconnect();
      const probe = `SELECT count(*)::int AS n FROM ${quoteIdent(run.config.databaseSchema)}.dead_letters WHERE error_message = 'acl-probe'`;
      await waitFor(async () => (await run.pool.query<{ n: number }>(probe)).rows[0]?.n === 1, { what: 'the probe letter recorded' });
    } finally {
      await run.stop();
    }
  }, 240_000);

  it('the broker enforces them: without ACLs the same user cannot start, and the CLI says which setting and which ACL (exit 2)', async () => {
    const prefix = `acl_${uniqueSuffix()}`;
    const env = {
      KAFKA_BROKERS: broker.address, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: access.caFile, KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: access.loader.username, KAFKA_SASL_PASSWORD: access.loader.password, TOPIC_PREFIX: prefix,
    };
    // The registry is the test run's (production commands require it set); Kafka is the secured broker.
    const r = await runCli(['ingress'], { ...env, SCHEMA_REGISTRY_URL: inject('services').SCHEMA_REGISTRY_URL, INGRESS_PORT: String(await freePort()), LOG_LEVEL: 'error' }, 120_000);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^billing-loader: KAFKA_SASL_USERNAME: the brokers deny this user TOPIC_AUTHORIZATION_FAILED on ${prefix}\\.webhooks; grant it the ACLs`, 'm'));
  }, 150_000);
});
