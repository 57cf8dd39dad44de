import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createServer as createHttpsServer } from 'node:https';
import { createPool } from '../../src/db/pool.js';
import { createRegistry } from '../../src/registry/registry.js';
import { kafkaConnection } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { runCommand } from '../../src/stack/processes.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Certificate files renewed on disk (cert-manager, Vault, a mounted secret) are used from the
 * next connection on, without a restart: the Kafka client's connections read KAFKA_SSL_CA_FILE,
 * KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE each time one is opened, and so do PostgreSQL's
 * (sslrootcert in DATABASE_URL).
 */
let dir: string;
const f = (n: string) => join(dir, n);
let server: Server;
let serverPort: number;
const clientNames: string[] = [];

async function ca(name: string): Promise<void> {
  await runCommand('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.pem`), '-days', '1', '-subj', `/CN=${name}`]);
}

async function signed(name: string, by: string): Promise<void> {
  await runCommand('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`]);
  await runCommand('openssl', ['x509', '-req', '-in', f(`${name}.csr`), '-CA', f(`${by}.pem`), '-CAkey', f(`${by}.key`), '-CAcreateserial', '-out', f(`${name}.pem`), '-days', '1', '-extfile', f('ext')]);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tls-files-'));
  writeFileSync(f('ext'), 'subjectAltName=IP:127.0.0.1\n');
  await ca('ca-one');
  await ca('ca-two');
  await signed('server', 'ca-two');
  await signed('client-one', 'ca-one');
  await signed('client-two', 'ca-one');
  // A TLS endpoint standing in for a broker: it records the client certificate of each connection.
  const { readFileSync } = await import('node:fs');
  server = createServer({ key: readFileSync(f('server.key')), cert: readFileSync(f('server.pem')), requestCert: true, rejectUnauthorized: false }, (socket: TLSSocket) => {
    clientNames.push(String(socket.getPeerCertificate().subject?.CN ?? 'none'));
    socket.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverPort = (server.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('Kafka TLS files', () => {
  /** Opens one connection through the socket factory kafkaConnection gives the Kafka client; resolves to the TLS outcome. */
  function connectOnce(factory: NonNullable<ReturnType<typeof kafkaConnection>['socketFactory']>): Promise<'connected' | string> {
    return new Promise((resolve) => {
      // Left open until the server, having recorded the client certificate, ends it.
      const socket = factory({ host: '127.0.0.1', port: serverPort, ssl: {}, onConnect: () => resolve('connected') }) as TLSSocket;
      socket.once('end', () => socket.destroy());
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
  }

  it('reads the CA and the client certificate again for every connection', async () => {
    copyFileSync(f('ca-one.pem'), f('trusted.pem'));
    copyFileSync(f('client-one.pem'), f('client.pem'));
    copyFileSync(f('client-one.key'), f('client.key'));
    const config = testConfig({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: f('trusted.pem'), KAFKA_SSL_CERT_FILE: f('client.pem'), KAFKA_SSL_KEY_FILE: f('client.key') });
    const { socketFactory } = kafkaConnection(config);
    expect(socketFactory).toBeDefined();
    if (!socketFactory) return;

    // The broker's CA is not the trusted one yet: refused.
    expect(await connectOnce(socketFactory)).not.toBe('connected');

    // The CA file and the client certificate renewed on disk: the next connection uses both.
    copyFileSync(f('ca-two.pem'), f('trusted.pem'));
    copyFileSync(f('client-two.pem'), f('client.pem'));
    copyFileSync(f('client-two.key'), f('client.key'));
    expect(await connectOnce(socketFactory)).toBe('connected');
    await waitFor(() => clientNames.length > 0, { what: 'the server saw the client certificate' });
    expect(clientNames.at(-1)).toBe('client-two');
  });
});

describe('schema registry CA file', () => {
  it('reads SCHEMA_REGISTRY_CA_FILE again for every new connection', async () => {
    const { readFileSync } = await import('node:fs');
    // An https endpoint standing in for the registry, its certificate signed by ca-two.
    const https = createHttpsServer({ key: readFileSync(f('server.key')), cert: readFileSync(f('server.pem')) }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end('[]');
    });
    await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
    try {
      copyFileSync(f('ca-one.pem'), f('registry-ca.pem'));
      const registry = createRegistry({ schemaRegistryUrl: `https://127.0.0.1:${(https.address() as AddressInfo).port}`, schemaRegistryUsername: undefined, schemaRegistryPassword: undefined, schemaRegistryCaFile: f('registry-ca.pem') });
      await expect(registry.ping()).rejects.toThrow();
      copyFileSync(f('ca-two.pem'), f('registry-ca.pem'));
      await expect(registry.ping()).resolves.toBeUndefined();
    } finally {
      https.closeAllConnections();
      await new Promise((resolve) => https.close(resolve));
    }
  });
});

describe('PostgreSQL TLS files', () => {
  it("reads DATABASE_URL's sslrootcert again for every new connection of a pool", async () => {
    const url = new URL(inject('services').DATABASE_URL);
    url.searchParams.set('sslmode', 'require');
    url.searchParams.set('sslrootcert', f('pg-root.pem'));
    const pool = createPool({ databaseUrl: url.toString(), applicationName: 'tls-files-test', log: silentLogger, max: 1 });
    try {
      // No file yet: the connection fails reading it.
      // (pg reads the file as it builds a client, and throws from the call: a caller awaits either way.)
      await expect((async () => pool.query('SELECT 1'))()).rejects.toThrow(/ENOENT/);
      // The file appears (as a renewed secret would): the same pool's next connection reads it and
      // goes on to the TLS handshake, whatever the server then answers.
      copyFileSync(f('ca-one.pem'), f('pg-root.pem'));
      const second = await (async () => pool.query('SELECT 1'))().then(() => 'connected', (err: Error) => err.message);
      expect(second).not.toMatch(/ENOENT/);
    } finally {
      await pool.end();
    }
  });
});
