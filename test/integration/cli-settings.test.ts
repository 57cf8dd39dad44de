import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
