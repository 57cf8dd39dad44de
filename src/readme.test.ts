import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeOptions } from './config.js';
import { packageRoot } from './package-root.js';

describe('README', () => {
  const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');

  it('opens with the two commands of a fresh machine', () => {
    const firstBlock = readme.split('```')[1] ?? '';
    expect(firstBlock).toMatch(/^sh\nnpm start\b/);
    expect(firstBlock).toMatch(/\nnpm test\b/);
  });

  it('documents every configuration option exactly as src/config.ts declares it', () => {
    for (const o of describeOptions()) {
      expect(readme, o.env).toContain(`| \`${o.env}\` | ${o.description.replace(/\|/g, '\\|')} | ${o.default} |`);
    }
  });
});
