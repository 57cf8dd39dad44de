import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { uniqueSuffix } from '../helpers/environment.js';
import { packageRoot } from '../../src/package-root.js';
import { runCli } from '../helpers/cli.js';

const { version } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };

/** The environment without the connection settings the test run itself was given. */
const WITHOUT_CONNECTIONS = { KAFKA_BROKERS: undefined, SCHEMA_REGISTRY_URL: undefined, DATABASE_URL: undefined, STACK_DIR: '/nonexistent-stack-dir', LOG_LEVEL: 'error' };

/** The lines of a CLI's stderr that are not JSON log lines. */
function plainLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{'));
}

describe('settings a production command cannot start without', () => {
  it.each([
    ['sink', 'KAFKA_BROKERS'],
    ['ingress', 'KAFKA_BROKERS'],
    ['migrate', 'DATABASE_URL'],
  ])('%s exits 2 at once, naming the missing %s, instead of reaching for the local stack', async (command, variable) => {
    const { code, stderr } = await runCli([command], WITHOUT_CONNECTIONS, 30_000);
    expect(code, stderr).toBe(2);
    expect(plainLines(stderr)).toEqual([expect.stringMatching(new RegExp(`^billing-loader: ${variable}: not set; this command needs it`))]);
  });
});

describe('billing-loader --version', () => {
  it('prints the package version and exits 0, without any setting', async () => {
    const { code, stdout } = await runCli(['--version'], WITHOUT_CONNECTIONS, 30_000);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(version);
  });
});

describe('secrets from files', () => {
  it('migrate reaches the database through DATABASE_URL_FILE alone (a mounted secret, with its trailing newline)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'billing-loader-secret-'));
    const schema = `test_${uniqueSuffix()}`;
    const databaseUrl = inject('services').DATABASE_URL;
    const pool = createPool({ databaseUrl, applicationName: 'cli-settings-test', log: silentLogger, max: 1 });
    try {
      writeFileSync(join(dir, 'database-url'), `${databaseUrl}\n`);
      const { code, stderr } = await runCli(['migrate'], { ...WITHOUT_CONNECTIONS, DATABASE_URL_FILE: join(dir, 'database-url'), DATABASE_SCHEMA: schema }, 60_000);
      expect(code, stderr).toBe(0);
      expect((await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount).toBe(1);
      const both = await runCli(['migrate'], { ...WITHOUT_CONNECTIONS, DATABASE_URL: databaseUrl, DATABASE_URL_FILE: join(dir, 'database-url'), DATABASE_SCHEMA: schema }, 60_000);
      expect(both.code).toBe(2);
      expect(plainLines(both.stderr)).toEqual(['billing-loader: DATABASE_URL_FILE: set either DATABASE_URL or DATABASE_URL_FILE, not both']);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      await pool.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
