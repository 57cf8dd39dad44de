import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteIdent } from '../../src/db/pool.js';
import { packageRoot } from '../../src/package-root.js';
import { ANALYST_ROLE } from '../../src/warehouse/resource-types.js';
import { scenarioWarehouse, type ScenarioWarehouse } from '../helpers/scenario-warehouse.js';

interface Example {
  name: string;
  /** `rows`: the scenario has the data, so an empty answer is a failure; `any`: it may be empty. */
  expect: 'rows' | 'any';
  sql: string;
}

/** Every ```sql example=<name> expect=<rows|any> block of docs/ANALYSTS.md. */
function examples(): Example[] {
  const doc = readFileSync(join(packageRoot, 'docs', 'ANALYSTS.md'), 'utf8');
  return [...doc.matchAll(/^```sql example=([a-z0-9-]+) expect=(rows|any)\n([\s\S]*?)^```$/gm)].map((m) => ({ name: m[1]!, expect: m[2] as Example['expect'], sql: m[3]! }));
}

/**
 * The analysts' guide's example queries, run as written, as billing_loader_analyst, with the
 * search_path an analyst's login gets, against the scenario warehouse: so that the guide cannot
 * drift from the views.
 */
describe('the example queries of docs/ANALYSTS.md', () => {
  const all = examples();
  let wh: ScenarioWarehouse;
  let client: pg.Client;

  beforeAll(async () => {
    wh = await scenarioWarehouse();
    client = new pg.Client({ connectionString: wh.databaseUrl, application_name: 'analyst-examples' });
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
  });

  it('are ten or more, each with its own name', () => {
    expect(all.length).toBeGreaterThanOrEqual(10);
    expect(new Set(all.map((e) => e.name)).size).toBe(all.length);
  });

  for (const example of all) {
    it(`${example.name} runs as the analyst role${example.expect === 'rows' ? ' and answers with rows' : ''}`, async () => {
      await client.query('BEGIN READ ONLY');
      try {
        await client.query(`SET LOCAL ROLE ${quoteIdent(ANALYST_ROLE)}`);
        await client.query(`SET LOCAL search_path TO ${quoteIdent(wh.schema)}`);
        const { rows } = await client.query(example.sql);
        if (example.expect === 'rows') expect(rows.length).toBeGreaterThan(0);
      } finally {
        await client.query('ROLLBACK');
      }
    });
  }
});
