import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../package-root.js';

// The stack's services find their files from the package root too.
export { packageRoot };

/** Where the local stack keeps its downloads, data, logs and pid files (git-ignored). */
export const defaultStackDir = join(packageRoot, '.stack');

/** Ports of the local stack; chosen off the usual ones so they do not collide with services a user runs. */
export interface StackPorts {
  kafka: number;
  kafkaController: number;
  registry: number;
  postgres: number;
}

export const defaultStackPorts: StackPorts = Object.freeze({ kafka: 19092, kafkaController: 19093, registry: 18081, postgres: 15432 });

/** The ports the stack in `dir` was last brought up with (`stack up` records them), else the defaults. */
export function readStackPorts(dir: string): StackPorts {
  const file = join(dir, 'stack.json');
  if (!existsSync(file)) return defaultStackPorts;
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Partial<StackPorts>;
    return {
      kafka: saved.kafka ?? defaultStackPorts.kafka,
      kafkaController: saved.kafkaController ?? defaultStackPorts.kafkaController,
      registry: saved.registry ?? defaultStackPorts.registry,
      postgres: saved.postgres ?? defaultStackPorts.postgres,
    };
  } catch {
    // A corrupt state file only loses remembered ports; `stack up` rewrites it.
    return defaultStackPorts;
  }
}

/** The Kafka line (`stack up --kafka-version`) the stack in `dir` was last brought up with, if recorded. */
export function readStackKafkaVersion(dir: string): string | undefined {
  const file = join(dir, 'stack.json');
  if (!existsSync(file)) return undefined;
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { kafkaVersion?: unknown };
    return typeof saved.kafkaVersion === 'string' ? saved.kafkaVersion : undefined;
  } catch {
    return undefined;
  }
}

/** The connection settings of section 2 that point at the local stack. */
export function stackConnectionSettings(ports: StackPorts): { KAFKA_BROKERS: string; SCHEMA_REGISTRY_URL: string; DATABASE_URL: string } {
  return {
    KAFKA_BROKERS: `127.0.0.1:${ports.kafka}`,
    SCHEMA_REGISTRY_URL: `http://127.0.0.1:${ports.registry}/apis/ccompat/v7`,
    DATABASE_URL: `postgres://postgres@127.0.0.1:${ports.postgres}/postgres`,
  };
}
