import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../package-root.js';
import { renderDbtSources } from './dbt-sources.js';
import { loadTypedColumns } from './typed-columns.js';

describe('the dbt package\'s sources', () => {
  it('list every typed column of the shipped mapping (regenerate with -u after changing it)', async () => {
    const rendered = renderDbtSources(await loadTypedColumns());
    await expect(rendered).toMatchFileSnapshot(join(packageRoot, 'analytics', 'dbt', 'models', 'sources', 'billing.yml'));
  });
});
