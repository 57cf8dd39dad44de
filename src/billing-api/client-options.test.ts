import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import { billingApiClientOptions } from './client-options.js';

const base = { KAFKA_BROKERS: 'k:9092', SCHEMA_REGISTRY_URL: 'http://r', DATABASE_URL: 'postgres://u@h/d', BILLING_API_URL: 'http://127.0.0.1:9/', BILLING_AUTH_URL: 'http://127.0.0.1:9', BILLING_CLIENT_ID: 'id', BILLING_CLIENT_SECRET: 's3cret' };

describe('billingApiClientOptions', () => {
  it('defaults the budget and the docs/CONTRACT.md paths', () => {
    const o = billingApiClientOptions(loadConfig(base));
    expect(o).toMatchObject({ apiUrl: 'http://127.0.0.1:9', requestsPerSecond: 20, burst: undefined, maxConcurrency: 8, requestTimeoutMs: 10_000, maxAttempts: 6 });
    expect(o.grant).toEqual({ kind: 'client_credentials', clientSecret: 's3cret' });
    expect(o.paths?.PaymentEscalationProcess).toBe('PaymentEscalationProcesses');
  });

  it('takes per-type paths and budget settings from the environment', () => {
    const o = billingApiClientOptions(loadConfig({ ...base, BILLING_PATH_CONTRACT: '/v2/contracts/', BILLING_API_REQUESTS_PER_SECOND: '5', BILLING_API_BURST: '2', BILLING_API_MAX_CONCURRENCY: '3' }));
    expect(o.paths?.Contract).toBe('v2/contracts');
    expect(o).toMatchObject({ requestsPerSecond: 5, burst: 2, maxConcurrency: 3 });
  });

  it.each(['../Customers', 'a/./b', 'Contracts?x=1', 'a//b'])('refuses the path %j', (path) => {
    expect(() => loadConfig({ ...base, BILLING_PATH_CONTRACT: path })).toThrow(/BILLING_PATH_CONTRACT: expected a path/);
  });

  it('takes the legal entity to send, and refuses one that could break the header', () => {
    expect(billingApiClientOptions(loadConfig(base)).legalEntityId).toBeUndefined();
    expect(billingApiClientOptions(loadConfig({ ...base, BILLING_LEGAL_ENTITY_ID: '5f1a0c3e9b7d4a2e8c6f0e01' })).legalEntityId).toBe('5f1a0c3e9b7d4a2e8c6f0e01');
    expect(() => loadConfig({ ...base, BILLING_LEGAL_ENTITY_ID: 'a b' })).toThrow(/BILLING_LEGAL_ENTITY_ID: expected 1-256 visible ASCII/);
  });

  it('names the missing variable', () => {
    expect(() => billingApiClientOptions(loadConfig({ KAFKA_BROKERS: 'k:9092', SCHEMA_REGISTRY_URL: 'http://r', DATABASE_URL: 'postgres://u@h/d' }))).toThrow(ConfigError);
  });
});
