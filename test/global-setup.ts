import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { KAFKA_LINES } from '../src/stack/kafka-lines.js';
import { installKafkaLine } from '../src/stack/kafka-service.js';
import { stackConnectionSettings, defaultStackDir, readStackPorts } from '../src/stack/settings.js';
import { stackDown, stackStatus, stackUp } from '../src/stack/stack.js';
import { dockerAvailable, startContainers } from './helpers/containers.js';

/**
 * Where the integration tests find real Kafka, a real schema registry and real PostgreSQL,
 * in this order: services named by KAFKA_BROKERS / SCHEMA_REGISTRY_URL / DATABASE_URL; else
 * containers (testcontainers) when a Docker engine answers; else the project's own native stack
 * (`billing-loader stack up`), which the run stops again if it started it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const env = process.env;
  // The sandbox scenario's warehouse, filled once per run by the first test file that asks for it.
  const scenarioSchema = `scenario_${randomBytes(4).toString('hex')}`;
  project.provide('scenarioSchema', scenarioSchema);
  if (env.KAFKA_BROKERS && env.SCHEMA_REGISTRY_URL && env.DATABASE_URL) {
    await installKafkaLines(env.STACK_DIR || defaultStackDir);
    project.provide('services', { KAFKA_BROKERS: env.KAFKA_BROKERS, SCHEMA_REGISTRY_URL: env.SCHEMA_REGISTRY_URL, DATABASE_URL: env.DATABASE_URL });
    // Services that outlive the run (a developer's stack) do not keep each run's scenario warehouse.
    const databaseUrl = env.DATABASE_URL;
    return () => dropSchema(databaseUrl, scenarioSchema);
  }
  if (env.TEST_STACK !== 'native' && (await dockerAvailable())) {
    const containers = await startContainers();
    project.provide('services', containers.settings);
    return containers.stop;
  }
  const dir = env.STACK_DIR || defaultStackDir;
  const ports = readStackPorts(dir);
  const wasRunning = stackStatus({ dir, ports }).every((s) => s.state === 'running');
  await stackUp({ dir, ports, progress: (line) => process.stderr.write(`[stack] ${line}\n`) });
  await installKafkaLines(dir);
  project.provide('services', stackConnectionSettings(ports));
  return async () => {
    // Leave a stack the developer had running; stop one this run started (CI).
    if (!wasRunning && env.KEEP_STACK !== '1') await stackDown({ dir, ports });
  };
}

/**
 * Private brokers (fault tests, the end-to-end test on the other Kafka lines) start from the
 * jars in the native stack's folder: every line is resolved here once (cached in the folder),
 * not by test files racing each other. Nothing to do where the stack runs in containers.
 */
async function installKafkaLines(stackDir: string): Promise<void> {
  if (!existsSync(join(stackDir, 'kafka'))) return;
  for (const line of KAFKA_LINES) await installKafkaLine(stackDir, line, (l) => process.stderr.write(`[stack] ${l}\n`));
}

async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  try {
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } catch {
    // A database that is gone already has nothing to keep.
  } finally {
    await client.end().catch(() => undefined);
  }
}
