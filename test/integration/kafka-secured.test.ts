import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { secureKafkaAccess } from '../../src/stack/kafka-service.js';
import { freePort } from '../helpers/free-port.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from '../faults/private-services.js';
import { runCli } from '../helpers/cli.js';
import { unexpectedDeadLetters, drainPipeline } from '../helpers/pipeline-drain.js';
import { startSimulatedPipeline, type SimulatedPipeline } from '../helpers/simulated-pipeline.js';
import { compareWarehouseToTruth, compareWebhooksToDeliveries } from '../helpers/warehouse-truth.js';

/**
 * A broker of this file's own whose only client listener is SASL_SSL with SCRAM-SHA-512 (a CA
 * and a broker certificate made at its start, users created at format time): the pipeline
 * reaches it only through KAFKA_SSL*, KAFKA_SASL_* and a refused password stops a component at
 * start with the setting to fix.
 */
let kafka: PrivateService & { folder: string };
let secured: Record<string, string>;

beforeAll(async () => {
  if (!nativeKafka) return;
  kafka = await startPrivateKafka({ secure: true });
  const access = secureKafkaAccess(kafka.folder);
  if (!access) throw new Error('the secured broker made no CA and users');
  secured = {
    KAFKA_BROKERS: kafka.address,
    KAFKA_SSL: 'true',
    KAFKA_SSL_CA_FILE: access.caFile,
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: access.loader.username,
    KAFKA_SASL_PASSWORD: access.loader.password,
  };
}, 240_000);

afterAll(async () => {
  await kafka?.dispose();
});

describe.skipIf(!nativeKafka)('Kafka over SASL_SSL (SCRAM-SHA-512)', () => {
  it('carries the whole pipeline: the warehouse holds the true history', async () => {
    let run: SimulatedPipeline | undefined;
    try {
      run = await startSimulatedPipeline({ name: 'kafka-secured-test', sim: { seed: 20251123 }, env: secured });
      const { sim, pool, config } = run;
      expect(config.kafkaBrokers).toEqual([kafka.address]);
      const scenario = await sim.runScenario({ name: 'default', customers: 12, stepDelayMs: 20 });
      expect(scenario.completed).toBe(true);
      await drainPipeline({ kafka: run.kafka, config, pool, sim, timeoutMs: 60_000 });
      const webhooks = await compareWebhooksToDeliveries(pool, config.databaseSchema, sim);
      expect(webhooks.problems).toEqual([]);
      expect(webhooks.lost).toBe(0);
      const truth = await compareWarehouseToTruth(pool, config.databaseSchema, sim);
      expect(truth.problems).toEqual([]);
      // Not vacuous: every contract and customer of the scenario has a history.
      expect(truth.objects).toBeGreaterThanOrEqual(sim.ids('Contract').length + sim.ids('Customer').length);
      // The only dead letters are give-ups of objects no read could ever see (created and deleted before it).
      expect((await unexpectedDeadLetters({ kafka: run.kafka, registry: run.registry, config, pool, sim })).unexpected).toEqual([]);
    } finally {
      await run?.stop();
    }
  }, 180_000);

  it.each([
    ['ingress', 'KAFKA_SASL_PASSWORD'],
    ['sink', 'KAFKA_SASL_PASSWORD'],
  ])('a refused password stops `%s` at start: one line naming %s, exit 2', async (command, variable) => {
    const wrong = 'not-the-password-0123';
    const r = await runCli([command], { ...secured, ...otherServices(), KAFKA_SASL_PASSWORD: wrong, TOPIC_PREFIX: `secured_${command}`, INGRESS_PORT: String(await freePort()), SINK_PORT: String(await freePort()), LOG_LEVEL: 'error' }, 120_000);
    expect(r.code, r.stderr).toBe(2);
    const lines = r.stderr.trim().split('\n').filter((l) => l.startsWith('billing-loader:'));
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^billing-loader: ${variable}: .*KAFKA_SASL_USERNAME`));
    expect(r.stderr).not.toContain(wrong);
  }, 150_000);

  it('refuses a client that does not trust the broker certificate (no KAFKA_SSL_CA_FILE)', async () => {
    const { KAFKA_SSL_CA_FILE: _ca, ...untrusted } = secured;
    const r = await runCli(['ingress'], { ...untrusted, ...otherServices(), TOPIC_PREFIX: 'secured_untrusted', INGRESS_PORT: String(await freePort()), LOG_LEVEL: 'error' }, 120_000);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^billing-loader: KAFKA_SSL_CA_FILE: /m);
  }, 150_000);
});

/** The test run's registry and database: production commands require them set; Kafka is the secured broker. */
function otherServices(): { SCHEMA_REGISTRY_URL: string; DATABASE_URL: string } {
  const services = inject('services');
  return { SCHEMA_REGISTRY_URL: services.SCHEMA_REGISTRY_URL, DATABASE_URL: services.DATABASE_URL };
}
