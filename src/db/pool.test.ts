import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { silentLogger } from '../log.js';
import { createPool } from './pool.js';

/**
 * TLS to PostgreSQL is set the libpq way, in the URL (docs/OPERATIONS.md). Neither the config nor
 * the pool may drop those parameters: what node-postgres makes of them is what each of the
 * pool's connections uses.
 */
const dir = mkdtempSync(join(tmpdir(), 'pool-tls-'));
const ca = join(dir, 'root.crt');
writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nTEST-CA\n-----END CERTIFICATE-----\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The TLS settings a connection of a pool built from DATABASE_URL=`url` would use. */
async function connectionSsl(url: string): Promise<unknown> {
  const config = loadConfig({ KAFKA_BROKERS: 'k:9092', SCHEMA_REGISTRY_URL: 'http://r', DATABASE_URL: url });
  const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log: silentLogger });
  try {
    const client = new pg.Client(pool.options) as pg.Client & { connectionParameters: { ssl: unknown } };
    return client.connectionParameters.ssl;
  } finally {
    await pool.end();
  }
}

describe('createPool: TLS parameters of DATABASE_URL', () => {
  it('verify-full with sslrootcert: the server certificate is checked against that CA, and its name too', async () => {
    const ssl = await connectionSsl(`postgres://u:p@db.example:5432/d?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`);
    expect(ssl).toMatchObject({ ca: expect.stringContaining('TEST-CA') });
    expect(ssl).not.toHaveProperty('rejectUnauthorized', false);
    expect(ssl).not.toHaveProperty('checkServerIdentity');
  });

  it('verify-ca with sslrootcert and uselibpqcompat=true: the CA is checked, not the host name', async () => {
    const ssl = (await connectionSsl(`postgres://u:p@db.example:5432/d?uselibpqcompat=true&sslmode=verify-ca&sslrootcert=${encodeURIComponent(ca)}`)) as Record<string, unknown>;
    expect(ssl).toMatchObject({ ca: expect.stringContaining('TEST-CA') });
    expect(ssl.rejectUnauthorized).not.toBe(false);
    expect(typeof ssl.checkServerIdentity).toBe('function');
  });

  it('require with uselibpqcompat=true: encrypted, certificate not checked (as libpq)', async () => {
    expect(await connectionSsl('postgres://u:p@db.example:5432/d?uselibpqcompat=true&sslmode=require')).toMatchObject({ rejectUnauthorized: false });
  });

  it('sslmode=disable: no TLS; no sslmode: no TLS', async () => {
    expect(await connectionSsl('postgres://u:p@db.example:5432/d?sslmode=disable')).toBe(false);
    expect(await connectionSsl('postgres://u:p@db.example:5432/d')).toBe(false);
  });
});
