import { join } from 'node:path';
import { packageRoot } from './settings.js';

/**
 * The Kafka release lines the local stack can run. Each has its own pom (the jars differ: 3.9
 * needs a reload4j backend, 4.x logs through log4j2) and its own libs and data folders, since a
 * KRaft log formatted by 4.x cannot be read by 3.9.
 */
export interface KafkaLine {
  /** What `stack up --kafka-version` takes: '3.9', '4.4'. */
  readonly name: string;
  /** The exact release the pom resolves. */
  readonly version: string;
  readonly pom: string;
  readonly logging: 'reload4j' | 'log4j2';
}

function line(name: string, version: string, logging: KafkaLine['logging']): KafkaLine {
  return Object.freeze({ name, version, logging, pom: join(packageRoot, 'src', 'stack', 'kafka', name, 'pom.xml') });
}

export const KAFKA_LINES: readonly KafkaLine[] = Object.freeze([line('3.9', '3.9.1', 'reload4j'), line('4.4', '4.4.0', 'log4j2')]);

/** The newest line; what `stack up` runs unless told otherwise. */
export const DEFAULT_KAFKA_LINE: KafkaLine = KAFKA_LINES[KAFKA_LINES.length - 1] as KafkaLine;

/** The line named by `name` ('4.4', '4.4.0', '4' for the newest 4.x); undefined when unknown. */
export function kafkaLine(name: string): KafkaLine | undefined {
  const exact = KAFKA_LINES.find((l) => l.name === name || l.version === name);
  if (exact) return exact;
  return [...KAFKA_LINES].reverse().find((l) => l.name.split('.')[0] === name);
}
