import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { configForCommand } from './cli-config.js';

const NO_STACK = { STACK_DIR: '/nonexistent-stack-dir' };
const KAFKA = { KAFKA_BROKERS: 'kafka-1:9092' };
const REGISTRY = { SCHEMA_REGISTRY_URL: 'https://registry.example' };
const DATABASE = { DATABASE_URL: 'postgres://writer@db.example:5432/warehouse' };

describe('configForCommand', () => {
  it.each([
    ['ingress', {}, 'KAFKA_BROKERS'],
    ['ingress', KAFKA, 'SCHEMA_REGISTRY_URL'],
    ['enricher', KAFKA, 'SCHEMA_REGISTRY_URL'],
    ['sink', { ...KAFKA, ...REGISTRY }, 'DATABASE_URL'],
    ['run', { ...KAFKA, ...REGISTRY }, 'DATABASE_URL'],
    ['migrate', {}, 'DATABASE_URL'],
    ['replay', { ...KAFKA, ...REGISTRY }, 'DATABASE_URL'],
    ['repartition', {}, 'KAFKA_BROKERS'],
    ['backfill', {}, 'KAFKA_BROKERS'],
    ['dashboard', {}, 'DATABASE_URL'],
  ] as const)('refuses to start %s without a connection setting it reads, naming it (%o)', (command, env, missing) => {
    const load = () => configForCommand(command, { ...NO_STACK, ...env });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(`^${missing}: not set`));
  });

  it('asks only for the connections a command reads: migrate needs no Kafka, repartition no database', () => {
    expect(configForCommand('migrate', { ...NO_STACK, ...DATABASE }).databaseUrl).toBe(DATABASE.DATABASE_URL);
    expect(configForCommand('repartition', { ...NO_STACK, ...KAFKA }).kafkaBrokers).toEqual(['kafka-1:9092']);
    expect(configForCommand('ingress', { ...NO_STACK, ...KAFKA, ...REGISTRY }).schemaRegistryUrl).toBe('https://registry.example');
  });

  it('lets migrate and dashboard run on their own login alone (MIGRATE_DATABASE_URL, DASHBOARD_DATABASE_URL), which wins over DATABASE_URL', () => {
    expect(configForCommand('migrate', { ...NO_STACK, MIGRATE_DATABASE_URL: 'postgres://owner@db.example/w' }).migrateDatabaseUrl).toBe('postgres://owner@db.example/w');
    expect(configForCommand('dashboard', { ...NO_STACK, DASHBOARD_DATABASE_URL: 'postgres://analyst@db.example/w' }).dashboardDatabaseUrl).toBe('postgres://analyst@db.example/w');
    expect(() => configForCommand('replay', { ...NO_STACK, ...KAFKA, ...REGISTRY, MIGRATE_DATABASE_URL: 'postgres://owner@db.example/w' })).toThrow(/^DATABASE_URL: not set/);
  });

  it.each(['stack', 'demo', 'simulate'] as const)('lets %s default the connections to the local stack', (command) => {
    const c = configForCommand(command, NO_STACK);
    expect(c.kafkaBrokers).toEqual(['127.0.0.1:19092']);
    expect(c.schemaRegistryUrl).toBe('http://127.0.0.1:18081/apis/ccompat/v7');
    expect(c.databaseUrl).toBe('postgres://postgres@127.0.0.1:15432/postgres');
  });
});
