import { describe, expect, it } from 'vitest';
import { ConfigError } from './errors.js';
import { Writable } from 'node:stream';
import { SECRET_FIELDS, describeOptions, loadConfig, migrateDatabaseUrl, requireBillingApi, withoutPassword } from './config.js';
import { createLogger } from './log.js';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configWithLocalStack } from './cli/cli-config.js';

const thisFile = fileURLToPath(import.meta.url);

/** Where the services are: loadConfig itself has no default for them. */
const SERVICES = { KAFKA_BROKERS: '127.0.0.1:9092', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081', DATABASE_URL: 'postgres://u@127.0.0.1:5432/d' };

describe('loadConfig', () => {
  it('requires the connection settings when the caller gives no defaults, naming the first one missing', () => {
    expect(() => loadConfig({})).toThrow(/^KAFKA_BROKERS: not set; this command needs it \(only stack, demo and simulate default it to the local stack\)$/);
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:1' })).toThrow(/^SCHEMA_REGISTRY_URL: not set/);
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r' })).toThrow(/^DATABASE_URL: not set/);
  });

  it('defaults everything from an empty environment to the local stack, through the CLI layer', () => {
    const c = configWithLocalStack({ STACK_DIR: '/nonexistent-stack-dir' });
    expect(c.kafkaBrokers).toEqual(['127.0.0.1:19092']);
    expect(c.schemaRegistryUrl).toBe('http://127.0.0.1:18081/apis/ccompat/v7');
    expect(c.databaseSchema).toBe('billing');
    expect(c.topicPrefix).toBe('billing');
    expect(c.topicPartitions).toBe(6);
    expect(c.ingressPort).toBe(8080);
    expect(c.billingApiUrl).toBeUndefined();
    expect(Object.isFrozen(c)).toBe(true);
  });

  it.each([
    ['KAFKA_BROKERS', 'localhost', /KAFKA_BROKERS: expected comma-separated host:port, got 'localhost'/],
    ['SCHEMA_REGISTRY_URL', 'not a url', /SCHEMA_REGISTRY_URL: expected a URL/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL: expected postgres:\/\//],
    ['DATABASE_SCHEMA', 'Billing; DROP', /DATABASE_SCHEMA: expected a lower-case SQL identifier/],
    ['TOPIC_PREFIX', 'a b', /TOPIC_PREFIX: expected letters/],
    ['TOPIC_PARTITIONS', '0', /TOPIC_PARTITIONS: expected a positive integer/],
    ['INGRESS_PORT', '70000', /INGRESS_PORT: expected a port number/],
    ['LOG_LEVEL', 'verbose', /LOG_LEVEL: expected one of debug, info, warn, error/],
    ['INGRESS_TOKEN', 'short', /INGRESS_TOKEN: expected 16-256 URL-safe characters/],
    ['DATABASE_ROLES', 'tenant', /DATABASE_ROLES: expected shared or schema, got 'tenant'/],
  ])('rejects a malformed %s in one line naming it', (variable, value, message) => {
    expect(() => loadConfig({ ...SERVICES, [variable]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...SERVICES, [variable]: value })).toThrow(message);
  });

  it('DATABASE_ROLES=schema takes a schema whose role names fit PostgreSQL\'s 63 characters', () => {
    expect(loadConfig(SERVICES).databaseRoles).toBe('shared');
    expect(loadConfig({ ...SERVICES, DATABASE_ROLES: 'schema', DATABASE_SCHEMA: 'a'.repeat(55) }).databaseRoles).toBe('schema');
    expect(() => loadConfig({ ...SERVICES, DATABASE_ROLES: 'schema', DATABASE_SCHEMA: 'a'.repeat(56) })).toThrow(/^DATABASE_SCHEMA: at most 55 characters with DATABASE_ROLES=schema/);
    expect(loadConfig({ ...SERVICES, DATABASE_SCHEMA: 'a'.repeat(56) }).databaseSchema).toHaveLength(56);
  });

  it('never echoes a secret value in an error, and the logger redacts every secret option', async () => {
    expect(() => loadConfig({ ...SERVICES, INGRESS_TOKEN: 'sh!' })).toThrow(/^INGRESS_TOKEN: expected 16-256 URL-safe characters[^']*$/);
    const c = loadConfig({
      ...SERVICES,
      BILLING_CLIENT_SECRET: 's3cret-value', DATABASE_URL: 'postgres://u:pw-value@h:5432/d', MIGRATE_DATABASE_URL: 'postgres://o:pw-value@h:5432/d', INGRESS_TOKEN: 'token-value-0123456789',
      KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'loader', KAFKA_SASL_PASSWORD: 'sasl-value', SCHEMA_REGISTRY_USERNAME: 'reg', SCHEMA_REGISTRY_PASSWORD: 'registry-value',
    });
    expect({ ...c, topicPrefix: 'x' }.databaseUrl).toBe('postgres://u:pw-value@h:5432/d'); // survives spreading
    let written = '';
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => { written += chunk.toString(); done(); } });
    createLogger('info', sink).info('config', { config: c });
    await new Promise((r) => setImmediate(r));
    expect(written).toContain('topicPrefix');
    expect(written).not.toMatch(/s3cret-value|pw-value|token-value|sasl-value|registry-value/);
    for (const field of SECRET_FIELDS) expect(written, field).toContain(`"${field}":"[redacted]"`);
    expect(withoutPassword('postgres://u:pw-value@h:5432/d')).toBe('postgres://u:****@h:5432/d');
  });

  it('reads INGRESS_TOKEN as a comma-separated list, so a token can be rotated; each one checked', () => {
    expect(loadConfig({ ...SERVICES, INGRESS_TOKEN: 'one-token-0123456789' }).ingressTokens).toEqual(['one-token-0123456789']);
    expect(loadConfig({ ...SERVICES, INGRESS_TOKEN: 'old-token-0123456789, new-token-0123456789' }).ingressTokens).toEqual(['old-token-0123456789', 'new-token-0123456789']);
    expect(loadConfig(SERVICES).ingressTokens).toBeUndefined();
    expect(() => loadConfig({ ...SERVICES, INGRESS_TOKEN: 'old-token-0123456789,short' })).toThrow(/^INGRESS_TOKEN: expected 16-256 URL-safe characters[^']*$/);
    expect(() => loadConfig({ ...SERVICES, INGRESS_TOKEN: 'old-token-0123456789,,' })).toThrow(/^INGRESS_TOKEN: /);
  });

  it('stops within SHUTDOWN_TIMEOUT_MS, by default inside the 30 s Kubernetes grants, the ingress shutdown delay included', () => {
    const c = loadConfig(SERVICES);
    expect(c.shutdownTimeoutMs).toBeLessThan(30_000);
    expect(c.ingressShutdownDelayMs).toBe(0);
    expect(loadConfig({ ...SERVICES, SHUTDOWN_TIMEOUT_MS: '45000', INGRESS_SHUTDOWN_DELAY_MS: '5000' })).toMatchObject({ shutdownTimeoutMs: 45_000, ingressShutdownDelayMs: 5000 });
    expect(() => loadConfig({ ...SERVICES, SHUTDOWN_TIMEOUT_MS: '0' })).toThrow(/^SHUTDOWN_TIMEOUT_MS: expected a positive integer/);
    expect(() => loadConfig({ ...SERVICES, SHUTDOWN_TIMEOUT_MS: '10000', INGRESS_SHUTDOWN_DELAY_MS: '10000' })).toThrow(/^INGRESS_SHUTDOWN_DELAY_MS: must be less than SHUTDOWN_TIMEOUT_MS \(10000\)/);
  });

  it('reads every secret from <VARIABLE>_FILE instead, trailing newline trimmed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-secret-files-'));
    const file = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    const c = loadConfig({
      KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r',
      DATABASE_URL_FILE: file('db', 'postgres://w:pw-value@h:5432/d\n'),
      MIGRATE_DATABASE_URL_FILE: file('owner', 'postgres://o:pw@h:5432/d'),
      DASHBOARD_DATABASE_URL_FILE: file('dash', 'postgres://a:pw@h:5432/d\r\n'),
      BILLING_CLIENT_SECRET_FILE: file('client-secret', 's3cret value with spaces \n'),
      KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD_FILE: file('sasl', 'sasl-pw\n'),
      SCHEMA_REGISTRY_USERNAME: 'reg', SCHEMA_REGISTRY_PASSWORD_FILE: file('registry', 'registry-pw\n'),
      INGRESS_TOKEN_FILE: file('token', 'old-token-0123456789,new-token-0123456789\n'),
    });
    expect(c).toMatchObject({
      databaseUrl: 'postgres://w:pw-value@h:5432/d', migrateDatabaseUrl: 'postgres://o:pw@h:5432/d', dashboardDatabaseUrl: 'postgres://a:pw@h:5432/d',
      billingClientSecret: 's3cret value with spaces ', kafkaSaslPassword: 'sasl-pw', schemaRegistryPassword: 'registry-pw',
      ingressTokens: ['old-token-0123456789', 'new-token-0123456789'],
    });
    expect(loadConfig({ ...SERVICES, BILLING_PASSWORD_FILE: file('password', 'pw\n'), BILLING_USERNAME: 'u' }).billingPassword).toBe('pw');
  });

  it('refuses a secret given both directly and as a file, or a file it cannot read, naming the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-secret-files-'));
    const path = join(dir, 'secret');
    writeFileSync(path, 'x');
    expect(() => loadConfig({ ...SERVICES, BILLING_CLIENT_SECRET: 'a', BILLING_CLIENT_SECRET_FILE: path })).toThrow(/^BILLING_CLIENT_SECRET_FILE: set either BILLING_CLIENT_SECRET or BILLING_CLIENT_SECRET_FILE, not both$/);
    expect(() => loadConfig({ ...SERVICES, KAFKA_SASL_PASSWORD_FILE: join(dir, 'missing') })).toThrow(/^KAFKA_SASL_PASSWORD_FILE: no readable file at '.*missing'$/);
    // A malformed value read from a file is reported like one from the environment, never echoed.
    writeFileSync(path, 'mysql://u:pw-value@h/d\n');
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r', DATABASE_URL_FILE: path })).toThrow(/^DATABASE_URL_FILE: expected postgres:\/\/[^]*$/);
    expect(() => loadConfig({ KAFKA_BROKERS: 'k:1', SCHEMA_REGISTRY_URL: 'http://r', DATABASE_URL_FILE: path })).not.toThrow(/pw-value/);
  });

  it('lists the _FILE form beside every secret in --help and the README', () => {
    for (const o of describeOptions().filter((d) => ['DATABASE_URL', 'INGRESS_TOKEN', 'KAFKA_SASL_PASSWORD', 'BILLING_CLIENT_SECRET'].includes(d.env))) {
      expect(o.description).toContain(`${o.env}_FILE`);
    }
    expect(describeOptions().find((d) => d.env === 'KAFKA_BROKERS')?.description).not.toContain('_FILE');
  });

  it('requires the billing API settings only where a command needs them, naming the missing variable', () => {
    const c = loadConfig({ ...SERVICES, BILLING_API_URL: 'http://api', BILLING_AUTH_URL: 'http://auth', BILLING_CLIENT_ID: 'id' });
    expect(() => requireBillingApi(c)).toThrow(/^BILLING_CLIENT_SECRET: required/);
    const ok = requireBillingApi(loadConfig({ ...SERVICES, BILLING_API_URL: 'http://api/', BILLING_AUTH_URL: 'http://auth', BILLING_CLIENT_ID: 'id', BILLING_CLIENT_SECRET: 's' }));
    expect(ok).toMatchObject({ apiUrl: 'http://api', grant: { kind: 'client_credentials' } });
  });

  it('takes the owner login for DDL from MIGRATE_DATABASE_URL, else DATABASE_URL', () => {
    expect(migrateDatabaseUrl(loadConfig({ ...SERVICES, DATABASE_URL: 'postgres://w@h/d' }))).toBe('postgres://w@h/d');
    expect(migrateDatabaseUrl(loadConfig({ ...SERVICES, DATABASE_URL: 'postgres://w@h/d', MIGRATE_DATABASE_URL: 'postgres://o@h/d' }))).toBe('postgres://o@h/d');
  });

  it("reads migrate's lock timeout, attempts and the user's typed columns file, each refused in one line when malformed", () => {
    const defaults = loadConfig(SERVICES);
    expect([defaults.migrateLockTimeoutMs, defaults.migrateLockAttempts, defaults.typedColumnsFile]).toEqual([5000, 10, undefined]);
    const dir = mkdtempSync(join(tmpdir(), 'typed-columns-'));
    const file = join(dir, 'mine.json');
    writeFileSync(file, '{}');
    const c = loadConfig({ ...SERVICES, MIGRATE_LOCK_TIMEOUT_MS: '250', MIGRATE_LOCK_ATTEMPTS: '3', TYPED_COLUMNS_FILE: file });
    expect([c.migrateLockTimeoutMs, c.migrateLockAttempts, c.typedColumnsFile]).toEqual([250, 3, file]);
    expect(() => loadConfig({ ...SERVICES, MIGRATE_LOCK_TIMEOUT_MS: '0' })).toThrow(/^MIGRATE_LOCK_TIMEOUT_MS: expected a positive integer, got '0'$/);
    expect(() => loadConfig({ ...SERVICES, MIGRATE_LOCK_ATTEMPTS: 'many' })).toThrow(/^MIGRATE_LOCK_ATTEMPTS: expected a positive integer, got 'many'$/);
    expect(() => loadConfig({ ...SERVICES, TYPED_COLUMNS_FILE: join(dir, 'absent.json') })).toThrow(/^TYPED_COLUMNS_FILE: no readable file at '.*absent\.json'$/);
    expect(describeOptions('migrate').map((o) => o.env)).toEqual(expect.arrayContaining(['MIGRATE_LOCK_TIMEOUT_MS', 'MIGRATE_LOCK_ATTEMPTS', 'TYPED_COLUMNS_FILE']));
    expect(describeOptions('replay').map((o) => o.env)).toEqual(expect.arrayContaining(['MIGRATE_LOCK_TIMEOUT_MS', 'MIGRATE_LOCK_ATTEMPTS', 'TYPED_COLUMNS_FILE']));
  });

  it('refuses a headers time limit longer than the request time limit', () => {
    expect(() => loadConfig({ ...SERVICES, INGRESS_HEADERS_TIMEOUT_MS: '40000' })).toThrow(/^INGRESS_HEADERS_TIMEOUT_MS: must not exceed INGRESS_REQUEST_TIMEOUT_MS/);
  });

  it('refuses both grants at once', () => {
    expect(() => loadConfig({ ...SERVICES, BILLING_CLIENT_SECRET: 's', BILLING_USERNAME: 'u', BILLING_PASSWORD: 'p' })).toThrow(/either BILLING_CLIENT_SECRET .* not both/);
  });

  it('reads the Kafka TLS/SASL and registry auth settings', () => {
    const c = loadConfig({
      ...SERVICES,
      KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: thisFile, KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'loader', KAFKA_SASL_PASSWORD: 'pw',
      SCHEMA_REGISTRY_USERNAME: 'reg', SCHEMA_REGISTRY_PASSWORD: 'regpw', SCHEMA_REGISTRY_CA_FILE: thisFile,
    });
    expect(c).toMatchObject({ kafkaSsl: true, kafkaSslCaFile: thisFile, kafkaSaslMechanism: 'scram-sha-512', kafkaSaslUsername: 'loader', kafkaSaslPassword: 'pw', schemaRegistryUsername: 'reg', schemaRegistryPassword: 'regpw', schemaRegistryCaFile: thisFile });
    expect(loadConfig(SERVICES).kafkaSsl).toBe(false);
  });

  it.each([
    [{ KAFKA_SSL: 'yes' }, /^KAFKA_SSL: expected true or false, got 'yes'$/],
    [{ KAFKA_SASL_MECHANISM: 'gssapi' }, /^KAFKA_SASL_MECHANISM: expected one of plain, scram-sha-256, scram-sha-512, got 'gssapi'$/],
    [{ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_PASSWORD: 'pw' }, /^KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM$/],
    [{ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u' }, /^KAFKA_SASL_PASSWORD: required with KAFKA_SASL_MECHANISM$/],
    [{ KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'pw' }, /^KAFKA_SASL_MECHANISM: required with KAFKA_SASL_USERNAME\/KAFKA_SASL_PASSWORD/],
    [{ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: '/nonexistent/ca.pem' }, /^KAFKA_SSL_CA_FILE: no readable file at '\/nonexistent\/ca.pem'$/],
    [{ KAFKA_SSL_CA_FILE: thisFile }, /^KAFKA_SSL: set KAFKA_SSL=true to use KAFKA_SSL_CA_FILE/],
    [{ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: thisFile }, /^KAFKA_SSL_KEY_FILE: required with KAFKA_SSL_CERT_FILE/],
    [{ KAFKA_SSL: 'true', KAFKA_SSL_KEY_FILE: thisFile }, /^KAFKA_SSL_CERT_FILE: required with KAFKA_SSL_KEY_FILE/],
    [{ SCHEMA_REGISTRY_USERNAME: 'u' }, /^SCHEMA_REGISTRY_PASSWORD: required with SCHEMA_REGISTRY_USERNAME$/],
    [{ SCHEMA_REGISTRY_PASSWORD: 'p' }, /^SCHEMA_REGISTRY_USERNAME: required with SCHEMA_REGISTRY_PASSWORD$/],
    [{ SCHEMA_REGISTRY_CA_FILE: '/nonexistent/ca.pem' }, /^SCHEMA_REGISTRY_CA_FILE: no readable file at '\/nonexistent\/ca.pem'$/],
  ])('refuses inconsistent Kafka/registry security settings in one line naming the variable (%o)', (env, message) => {
    expect(() => loadConfig({ ...SERVICES, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...SERVICES, ...env })).toThrow(message);
  });

  it('never echoes the SASL or registry password', () => {
    expect(() => loadConfig({ ...SERVICES, KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'pw-value', KAFKA_SSL: 'maybe' })).toThrow(/^KAFKA_SSL: [^]*$/);
    expect(SECRET_FIELDS).toEqual(expect.arrayContaining(['kafkaSaslPassword', 'schemaRegistryPassword']));
  });

  it('documents every option it reads', () => {
    const documented = describeOptions().map((o) => o.env);
    for (const v of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'DATABASE_SCHEMA', 'TOPIC_PREFIX', 'BILLING_API_URL', 'BILLING_AUTH_URL', 'BILLING_CLIENT_ID', 'BILLING_CLIENT_SECRET', 'BILLING_USERNAME', 'BILLING_PASSWORD', 'INGRESS_PORT', 'INGRESS_TOKEN', 'LOG_LEVEL']) {
      expect(documented).toContain(v);
    }
  });
});
