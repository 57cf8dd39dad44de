import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { packageRoot } from '../../src/package-root.js';
import { testConfig } from '../helpers/environment.js';

/**
 * docs/CONTRACT.md section 2: "a `.env` file may supply" the configuration, for every command. Each
 * command loads it through cliConfig, which also applies the process-wide settings (heap growth);
 * `migrate` and `stack status` stand for the commands that once read only the environment.
 */
const config = testConfig();
const dir = mkdtempSync(join(tmpdir(), 'billing-loader-dotenv-'));
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'cli-dotenv-test', log: silentLogger, max: 1 });
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(config.databaseSchema)} CASCADE`);
  await pool.end();
  rmSync(dir, { recursive: true, force: true });
});

it('migrate takes DATABASE_URL and DATABASE_SCHEMA from a .env file in the working folder', async () => {
  writeFileSync(join(dir, '.env'), `DATABASE_URL=${config.databaseUrl}\nDATABASE_SCHEMA=${config.databaseSchema}\n`);
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.DATABASE_SCHEMA;
  const child = spawnSync(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'migrate'], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 });
  expect(child.status, child.stderr).toBe(0);
  const { rowCount } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [config.databaseSchema]);
  expect(rowCount).toBe(1);
});

it('stack status takes STACK_DIR from a .env file in the working folder', () => {
  // A stack folder whose remembered ports no other stack uses: the report shows them only if it read this folder.
  const stackDir = join(dir, 'stack');
  mkdirSync(stackDir);
  writeFileSync(join(stackDir, 'stack.json'), JSON.stringify({ kafka: 39092, kafkaController: 39093, registry: 38081, postgres: 35432 }));
  writeFileSync(join(dir, '.env'), `STACK_DIR=${stackDir}\n`);
  const env = { ...process.env };
  delete env.STACK_DIR;
  const child = spawnSync(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'stack', 'status'], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 });
  expect(child.status, child.stderr).toBe(3);
  expect(child.stdout).toMatch(/^kafka\s+stopped\s+port 39092$/m);
  expect(child.stdout).toMatch(/^postgres\s+stopped\s+port 35432$/m);
});
