import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './log.js';
import { packageRoot } from './package-root.js';

const { version } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };

async function lines(write: (log: ReturnType<typeof createLogger>) => void, service?: string): Promise<Record<string, unknown>[]> {
  let written = '';
  const sink = new Writable({ write: (chunk: Buffer, _enc, done) => { written += chunk.toString(); done(); } });
  write(createLogger('debug', sink, service === undefined ? {} : { service }));
  await new Promise((r) => setImmediate(r));
  return written.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('createLogger', () => {
  it('puts the service and the package version on every line, children included', async () => {
    const out = await lines((log) => {
      log.info('one');
      log.child({ component: 'sink' }).warn('two', { partition: 3 });
    }, 'sink');
    expect(out).toHaveLength(2);
    for (const line of out) expect(line).toMatchObject({ service: 'sink', version });
    expect(out[1]).toMatchObject({ component: 'sink', partition: 3, msg: 'two' });
  });

  it('names the service billing-loader when the caller gives none', async () => {
    const [line] = await lines((log) => log.info('x'));
    expect(line).toMatchObject({ service: 'billing-loader', version });
  });
});
