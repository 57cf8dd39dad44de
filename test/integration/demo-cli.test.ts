import { afterAll, expect, inject, it } from 'vitest';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';

/**
 * `npm start` is the first command the README gives a new user: the demo, end to end, here
 * against the configured test services (it starts the local stack only when none are configured).
 */
const config = testConfig();
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'demo-cli-test', log: silentLogger, max: 1 });
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(config.databaseSchema)} CASCADE`);
  await pool.end();
});

it('the demo plays a history up to now through the whole pipeline and prints a summary with several versions per contract and no dead letters', { timeout: 240_000 }, async () => {
  const env = { ...inject('services'), TOPIC_PREFIX: config.topicPrefix, DATABASE_SCHEMA: config.databaseSchema };
  // Long enough that a contract's changes come seconds apart (the story clock paces 180 days over the run).
  const result = await runCli(['demo', '--duration', '20', '--seed', '7'], env, 230_000);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout).toContain('1/5 using the configured services');
  const summary = (label: string) => Number(new RegExp(`^ {2}${label}\\s+(\\d+)`, 'm').exec(result.stdout)?.[1]);
  expect(summary('webhooks delivered and acknowledged')).toBeGreaterThan(0);
  expect(summary('versions written')).toBeGreaterThan(0);
  expect(summary('records sent to a DLQ')).toBe(0);
  // The history a loader exists for: contracts read in several states, cancellations and plan changes among the changes.
  const contracts = summary('contracts of this run');
  expect(contracts).toBeGreaterThan(0);
  expect(summary('  with several versions')).toBeGreaterThan(contracts / 2);
  expect(summary('  cancellations in their history')).toBeGreaterThan(0);
  expect(summary('  plan changes in their history')).toBeGreaterThan(0);
  expect(result.stdout).toMatch(/up to now/);
  expect(result.stdout).toContain('npx billing-loader dashboard  then open http://localhost:8090/');
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoteIdent(config.databaseSchema)}.resource_versions`);
  // At least what the summary counted (it is printed once the pipeline drained).
  expect(Number(rows[0]?.n)).toBeGreaterThanOrEqual(summary('versions written'));
});
