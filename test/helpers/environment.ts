import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection settings of the services the integration tests run against (see test/global-setup.ts). */
    services: { KAFKA_BROKERS: string; SCHEMA_REGISTRY_URL: string; DATABASE_URL: string };
  }
}

/** A short random suffix: every test gets its own topics, groups, subjects and database schema. */
export function uniqueSuffix(): string {
  return randomBytes(4).toString('hex');
}

/**
 * A configuration pointing at the test services, with a private topic prefix and database
 * schema (`test_<suffix>`), plus any overrides. Built through loadConfig, so tests exercise the
 * real parsing.
 */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const suffix = uniqueSuffix();
  return loadConfig({
    ...inject('services'),
    TOPIC_PREFIX: `test_${suffix}`,
    DATABASE_SCHEMA: `test_${suffix}`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    ...overrides,
  });
}
