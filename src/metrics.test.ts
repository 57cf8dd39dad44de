import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';
import { packageRoot } from './package-root.js';

const { version } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };

describe('createMetrics', () => {
  it('exports billing_loader_build_info{version,node} = 1, as Prometheus recommends for build information', async () => {
    const text = await createMetrics().metrics();
    expect(text).toContain('# TYPE billing_loader_build_info gauge');
    expect(text).toContain(`billing_loader_build_info{version="${version}",node="${process.version}"} 1`);
  });
});
