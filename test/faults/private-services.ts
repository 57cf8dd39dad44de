import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_KAFKA_LINE } from '../../src/stack/kafka-lines.js';
import { installKafkaLine, kafkaLibsDir, kafkaService, type KafkaServiceOptions } from '../../src/stack/kafka-service.js';
import { postgresService } from '../../src/stack/postgres-service.js';
import type { StackService } from '../../src/stack/service.js';
import { defaultStackDir } from '../../src/stack/settings.js';
import { freePort } from '../helpers/free-port.js';

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
/** The native stack is in use (its folder holds a Kafka), so a JVM and mvn are at hand. */
export const nativeKafka = existsSync(join(stackDir, 'kafka'));

/**
 * A private broker of `options.line` (default: the stack's default line), secured if asked
 * (its CA and users: secureKafkaAccess(folder)). The line's jars are resolved once into the
 * stack folder, and shared from there.
 */
export async function startPrivateKafka(options: KafkaServiceOptions = {}): Promise<PrivateService & { folder: string }> {
  const line = options.line ?? DEFAULT_KAFKA_LINE;
  await installKafkaLine(stackDir, line, (l) => process.stderr.write(`[private kafka] ${l}\n`));
  const dir = mkdtempSync(join(tmpdir(), 'fault-kafka-'));
  mkdirSync(join(dir, 'kafka', line.name), { recursive: true });
  symlinkSync(kafkaLibsDir(stackDir, line), kafkaLibsDir(dir, line));
  const port = await freePort();
  const service = kafkaService(dir, port, await freePort(), options);
  return { ...(await launch(service, dir, `127.0.0.1:${port}`)), folder: dir };
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
