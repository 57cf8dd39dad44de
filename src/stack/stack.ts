import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UserError, errorMessage } from '../errors.js';
import { DEFAULT_KAFKA_LINE, type KafkaLine } from './kafka-lines.js';
import { kafkaService, runningKafkaLine } from './kafka-service.js';
import { postgresService } from './postgres-service.js';
import { portInUse } from './processes.js';
import { registryService } from './registry-service.js';
import type { StackService } from './service.js';
import { stackConnectionSettings, type StackPorts } from './settings.js';

export interface StackOptions {
  dir: string;
  ports: StackPorts;
  /** The Kafka release line to run (default: the newest). */
  kafkaLine?: KafkaLine;
  /** Human progress lines (the CLI prints them on stderr). */
  progress?: (line: string) => void;
  /** How long each service may take to answer after start, in milliseconds. Default 120000. */
  readyTimeoutMs?: number;
}

export interface ServiceStatus {
  name: string;
  /** What runs, when it is worth saying (the Kafka release). */
  version?: string;
  port: number;
  pid: number | undefined;
  state: 'running' | 'stopped';
}

function services(o: StackOptions): StackService[] {
  return [postgresService(o.dir, o.ports.postgres), kafkaService(o.dir, o.ports.kafka, o.ports.kafkaController, { line: o.kafkaLine ?? DEFAULT_KAFKA_LINE }), registryService(o.dir, o.ports.registry)];
}

/**
 * Brings every service up (installing on first use), idempotently: a service of ours that is
 * already running is only checked, never started twice. Resolves when each one does real work;
 * returns the connection settings of docs/CONTRACT.md section 2. All or nothing for what it
 * starts: a busy port is refused before any start, and when a service fails to install, start or
 * become ready, the services this call started are stopped before the error is thrown.
 */
export async function stackUp(o: StackOptions): Promise<Record<string, string>> {
  const progress = o.progress ?? (() => {});
  mkdirSync(o.dir, { recursive: true });
  const line = o.kafkaLine ?? DEFAULT_KAFKA_LINE;
  const running = runningKafkaLine(o.dir);
  // Each line has its own data folder: a running broker of another line would be "already
  // running" with the data of that line, which is not what was asked for.
  if (running !== undefined && running !== line) {
    const name = running === 'unknown' ? 'another Kafka' : `Kafka ${running.version}`;
    throw new UserError(`kafka: ${name} is running; run \`billing-loader stack down\` first to switch to Kafka ${line.version} (each line keeps its own data)`);
  }
  const all = services(o);
  // A busy port is refused before any service starts, so that the refusal leaves nothing running.
  for (const s of all) {
    if (s.runningPid() === undefined && (await portInUse(s.port))) {
      throw new UserError(`${s.name}: port ${s.port} is already in use by another process; stop it or choose another port (billing-loader stack up --help)`);
    }
  }
  // allSettled: a failure of one service is reported after the others settled, not while they still start.
  const started: StackService[] = [];
  const results = await Promise.allSettled(
    all.map(async (s) => {
      const begun = Date.now();
      if (s.runningPid() === undefined) {
        await s.install(progress);
        progress(`${s.name}: starting on 127.0.0.1:${s.port}`);
        started.push(s);
        await s.start();
      } else {
        progress(`${s.name}: already running (pid ${s.runningPid()})`);
      }
      try {
        await s.waitReady(o.readyTimeoutMs ?? 120_000);
      } catch (err) {
        throw new UserError(`${s.name} did not become ready: ${errorMessage(err)}; see ${s.logFile}`);
      }
      progress(`${s.name}: ready in ${((Date.now() - begun) / 1000).toFixed(1)} s`);
    }),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    // All or nothing for what this call started (a service that was already running stays): a
    // half-started stack would hold its ports, and the next `up` would find them busy.
    for (const s of started.reverse()) {
      if (s.runningPid() === undefined) continue;
      progress(`${s.name}: stopping (this stack up failed)`);
      await s.stop().catch((err: unknown) => progress(`${s.name}: could not stop: ${errorMessage(err)}`));
    }
    throw failed.reason;
  }
  writeFileSync(join(o.dir, 'stack.json'), JSON.stringify({ ...o.ports, kafkaVersion: line.name }, null, 2));
  return stackConnectionSettings(o.ports);
}

/** Stops exactly the processes this stack started (by pid file and command line). */
export async function stackDown(o: StackOptions): Promise<void> {
  const progress = o.progress ?? (() => {});
  // The registry and Kafka first, PostgreSQL last; each is independent, so order is only tidiness.
  for (const s of services(o).reverse()) {
    const pid = s.runningPid();
    if (pid === undefined) continue;
    progress(`${s.name}: stopping (pid ${pid})`);
    await s.stop();
  }
}

export function stackStatus(o: StackOptions): ServiceStatus[] {
  return services(o).map((s) => {
    const pid = s.runningPid();
    const line = s.name === 'kafka' && pid !== undefined ? runningKafkaLine(o.dir) : undefined;
    return { name: s.name, port: s.port, pid, state: pid === undefined ? 'stopped' : 'running', ...(line && line !== 'unknown' ? { version: `Kafka ${line.version}` } : {}) };
  });
}
