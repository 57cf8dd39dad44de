import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { isResourceType } from '../billing-api/resource-types.js';
import { metricViewsFile } from './metric-views.js';
import { loadTypedColumns, parseTypedColumns } from './typed-columns.js';
import { factKeys } from './version-facts.js';

describe('version facts key lists', () => {
  it('hold every field a metric view reads from version_facts, for the type it reads it of', async () => {
    const keys = factKeys(await loadTypedColumns());
    const sql = await readFile(metricViewsFile, 'utf8');
    let checked = 0;
    for (const view of sql.split(/^CREATE VIEW /m).slice(1)) {
      // `FROM (SELECT * FROM version_facts WHERE resource_type = 'Contract' ...) c CROSS JOIN LATERAL (SELECT c.fields) AS x(f)`
      const aliases = new Map<string, string>();
      for (const m of view.matchAll(/(?:version|current)_facts WHERE resource_type = '([A-Za-z]+)'[^)]*\) [a-z]+\s+CROSS JOIN LATERAL \(SELECT [a-z]+\.fields\) AS ([a-z]+)\(f\)/g)) aliases.set(m[2]!, m[1]!);
      // metric_contract_last_known_live: the listed contracts' fields from version_facts and current_facts.
      for (const m of view.matchAll(/FROM metric_contract_last_known_live [a-z]+\s+CROSS JOIN LATERAL \(SELECT [a-z]+\.fields\) AS ([a-z]+)\(f\)/g)) aliases.set(m[1]!, 'Contract');
      for (const m of view.matchAll(/\b([a-z]+)\.f -> '([a-z]+)'/g)) {
        const type = aliases.get(m[1]!);
        expect(type, `${m[0]} in ${view.slice(0, 40)}`).toBeDefined();
        if (!isResourceType(type!)) throw new Error(`unknown type ${type}`);
        expect(keys[type], `${type}: ${m[2]}`).toContain(m[2]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(15);
  });

  it('one lower-case key per field, whatever the spellings declared', () => {
    const keys = factKeys(parseTypedColumns({ Customer: [{ column: 'a', key: 'NickName', type: 'text' }, { column: 'b', key: 'nickname', type: 'text' }] }));
    expect(keys.Customer).toEqual(['nickname']);
    expect(keys.Contract).toContain('phases');
    expect(keys.Invoice).toEqual([]);
  });
});
