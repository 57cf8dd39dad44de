import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteIdent } from '../../src/db/pool.js';
import { packageRoot } from '../../src/package-root.js';
import { ANALYST_ROLE } from '../../src/warehouse/resource-types.js';
import { lifecycles, monthlyChurn, mrrDaily, mrrMonthly, mrrMovements, trialCohorts, truthPriceBook } from '../helpers/metric-truth.js';
import { scenarioWarehouse, type ScenarioWarehouse } from '../helpers/scenario-warehouse.js';
import { loadScenarioTruth, type ScenarioTruth } from '../helpers/warehouse-truth.js';

interface Example {
  name: string;
  /** `rows`: the scenario has the data, so an empty answer is a failure; `any`: it may be empty. */
  expect: 'rows' | 'any';
  sql: string;
}

/** A `date` column as node-pg reads it (midnight in the process's zone) back to its day. */
const localDay = (d: Date): string => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;

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
  let truth: ScenarioTruth;

  beforeAll(async () => {
    wh = await scenarioWarehouse();
    client = new pg.Client({ connectionString: wh.databaseUrl, application_name: 'analyst-examples' });
    await client.connect();
    truth = await loadScenarioTruth(client, wh.schema);
  });

  /**
   * The answers the questions must give, computed from the sandbox's truth (not from the
   * views), where the question is a metric: `now` is the moment the example ran at.
   */
  const answers: Record<string, (now: Date) => unknown[]> = {
    'churn-rate-by-month': (now) =>
      monthlyChurn(lifecycles(truth, now), now).map((r) => ({ ...r, churn_rate: r.paying_at_start === 0 ? null : (r.churned / r.paying_at_start).toFixed(4) })),
    'trial-conversion-by-cohort': (now) =>
      trialCohorts(lifecycles(truth, now), now).map((r) => ({ ...r, conversion_rate: (r.converted / r.trials).toFixed(4) })),
    'mrr-by-month': (now) =>
      mrrMonthly(mrrMovements(mrrDaily(truth, now, truthPriceBook(truth)), now))
        .filter((r) => r.currency !== null)
        .sort((a, b) => a.month.localeCompare(b.month) || a.currency!.localeCompare(b.currency!))
        .map((r) => ({ month: r.month, currency: r.currency, mrr: r.mrr!.toFixed(2), customers: r.customers })),
  };

  afterAll(async () => {
    await client?.end();
  });

  it('are ten or more, each with its own name, the metric ones checked against the truth', () => {
    expect(all.length).toBeGreaterThanOrEqual(10);
    for (const name of Object.keys(answers)) expect(all.map((e) => e.name)).toContain(name);
    expect(new Set(all.map((e) => e.name)).size).toBe(all.length);
  });

  for (const example of all) {
    it(`${example.name} runs as the analyst role${example.expect === 'rows' ? ' and answers with rows' : ''}`, async () => {
      await client.query('BEGIN READ ONLY');
      try {
        await client.query(`SET LOCAL ROLE ${quoteIdent(ANALYST_ROLE)}`);
        await client.query(`SET LOCAL search_path TO ${quoteIdent(wh.schema)}`);
        const now = (await client.query<{ now: Date }>('SELECT now()')).rows[0]!.now;
        const { rows } = await client.query(example.sql);
        if (example.expect === 'rows') expect(rows.length).toBeGreaterThan(0);
        const answer = answers[example.name];
        if (answer) {
          const normal = rows.map((r: Record<string, unknown>) =>
            Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Date ? localDay(v) : typeof v === 'string' && /^\d+$/.test(v) && k !== 'conversion_rate' && k !== 'churn_rate' ? Number(v) : v])),
          );
          expect(normal).toEqual(answer(now));
        }
      } finally {
        await client.query('ROLLBACK');
      }
    });
  }
});
