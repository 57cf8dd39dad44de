import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.js';

/**
 * The heap growth setting must reach V8's collector in a running process: V8 prints the factor
 * it picks after each full collection with --trace-gc-verbose. Runs the compiled modules (dist/,
 * built by `npm test`'s bootstrap) in a child node, which forces one full collection.
 */
function factorsAfterFullGc(script: string, nodeArgs: string[] = [], env: NodeJS.ProcessEnv = {}): string[] {
  const dist = (path: string): string => pathToFileURL(join(packageRoot, 'dist', path)).href;
  const source = `const heap = await import(${JSON.stringify(dist('heap-growth.js'))});
const cli = await import(${JSON.stringify(dist('cli/cli-config.js'))});
${script}
globalThis.gc();`;
  const child = spawnSync(process.execPath, ['--expose-gc', '--trace-gc-verbose', ...nodeArgs, '--input-type=module', '-e', source], {
    cwd: packageRoot,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  expect(child.status, child.stderr).toBe(0);
  // V8 of Node.js 20-22 prints the factor on its `Limit:` line, `(1.7)`; V8 of Node.js 24 and
  // later on a line of its own, `[HeapController] factor 1.7 based on …`.
  return [...child.stdout.matchAll(/\[HeapController\] (?:Limit: .*\((\d+\.\d)\)|factor (\d+\.\d) )/g)].map((m) => m[1] ?? m[2] ?? '');
}

describe('heap growth', () => {
  it('fixes the factor by which the heap may outgrow its live data', () => {
    expect(factorsAfterFullGc('heap.applyHeapGrowth(70);')).toContain('1.7');
  });

  it("restores V8's own rule when set to 0", () => {
    expect(factorsAfterFullGc('heap.applyHeapGrowth(70); heap.applyHeapGrowth(0);')).not.toContain('1.7');
  });

  it('yields to --heap-growing-percent on the node command line', () => {
    const factors = factorsAfterFullGc('heap.applyHeapGrowth(70);', ['--heap-growing-percent=30']);
    expect(factors).toContain('1.3');
    expect(factors).not.toContain('1.7');
  });

  it('is applied from HEAP_GROWTH_PERCENT when a command loads its configuration', () => {
    expect(factorsAfterFullGc("await cli.cliConfig('stack');", [], { HEAP_GROWTH_PERCENT: '70' })).toContain('1.7');
  });

  it('is applied by the executable before the modules whose loading runs the first full collections', () => {
    const child = spawnSync(process.execPath, ['--trace-gc-verbose', join(packageRoot, 'bin', 'billing-loader.js'), '--help'], { cwd: packageRoot, encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    const first = /\[HeapController\] (?:Limit: .*\((\d+\.\d)\)|factor (\d+\.\d) )/.exec(child.stdout);
    expect(first?.[1] ?? first?.[2]).toBe('1.5');
  });
});
