import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../package-root.js';
import { METRIC_TABLES, renderDbtSources } from './dbt-sources.js';
import { METRIC_VIEWS } from './metric-views.js';
import { loadTypedColumns } from './typed-columns.js';

describe('the dbt package\'s sources', () => {
  it('list every typed column of the shipped mapping (regenerate with -u after changing it)', async () => {
    const rendered = renderDbtSources(await loadTypedColumns());
    await expect(rendered).toMatchFileSnapshot(join(packageRoot, 'analytics', 'dbt', 'models', 'sources', 'billing.yml'));
  });

  it('list every public metric view', () => {
    expect(METRIC_TABLES.map((t) => t.name)).toEqual([...METRIC_VIEWS]);
  });
});
