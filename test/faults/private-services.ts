import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkaService } from '../../src/stack/kafka-service.js';
import { postgresService } from '../../src/stack/postgres-service.js';
import type { StackService } from '../../src/stack/service.js';
import { defaultStackDir } from '../../src/stack/settings.js';
import { freePort } from './fault-harness.js';

/**
 * A broker or a PostgreSQL server of a test's own (temporary folder, free ports, the native
 * stack's Kafka jars and PostgreSQL binaries), so that stopping it can never pull a service
 * from under another test or another developer's run on the same machine. Needs the native
 * stack's downloads; where the stack runs in containers, the tests that use them are skipped.
 */
export interface PrivateService {
  service: StackService;
  /** KAFKA_BROKERS or DATABASE_URL. */
  address: string;
  /** Starts it again if a test left it stopped, then stops it and removes its folder. */
  dispose(): Promise<void>;
}

const stackDir = process.env.STACK_DIR || defaultStackDir;
const kafkaLibs = join(stackDir, 'kafka', 'libs');
export const nativeKafka = existsSync(join(kafkaLibs, '.installed'));

export async function startPrivateKafka(): Promise<PrivateService> {
  const dir = mkdtempSync(join(tmpdir(), 'fault-kafka-'));
  mkdirSync(join(dir, 'kafka'), { recursive: true });
  symlinkSync(kafkaLibs, join(dir, 'kafka', 'libs'));
  const port = await freePort();
  const service = kafkaService(dir, port, await freePort());
  return launch(service, dir, `127.0.0.1:${port}`);
}

export async function startPrivatePostgres(): Promise<PrivateService> {
  const dir = mkdtempSync(join(tmpdir(), 'fault-postgres-'));
  // As root the server runs as `nobody`, which must be able to enter the folder.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const service = postgresService(dir, port);
  await service.install(() => undefined);
  return launch(service, dir, `postgres://postgres@127.0.0.1:${port}/postgres`);
}

async function launch(service: StackService, dir: string, address: string): Promise<PrivateService> {
  const dispose = async () => {
    try {
      // A service a test paused (SIGSTOP) would ignore SIGTERM until continued.
      const pid = service.runningPid();
      if (pid !== undefined) process.kill(pid, 'SIGCONT');
      await service.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    await service.start();
    await service.waitReady(90_000);
  } catch (err) {
    await dispose();
    throw err;
  }
  return { service, address, dispose };
}
