import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { appendVersions } from '../helpers/append-versions.js';
import { uniqueSuffix } from '../helpers/environment.js';

/**
 * The warehouse gives the same answers whatever the database's default collation. The stack's
 * database is initialised with the C locale; many are not (the PostgreSQL container images and
 * most managed services default to en_US.UTF-8), and there `ORDER BY` on text and `lower()`
 * follow the language's rules: lower case sorts before upper case. This file runs the letter-case
 * rules of the facts in two databases of its own, created beside the test database, one with the
 * C locale and one with ICU's en-US.
 */
const log = createLogger('warn');
const base = inject('services').DATABASE_URL;
const suffix = uniqueSuffix();
const databases = { c: `billing_loader_c_${suffix}`, icu: `billing_loader_icu_${suffix}` };
const schema = `test_${suffix}`;
const admin = createPool({ databaseUrl: base, applicationName: 'test', log });
const urlOf = (name: string) => {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
};
let icu: ReturnType<typeof createPool>;
let plain: ReturnType<typeof createPool>;

beforeAll(async () => {
  await admin.query(`CREATE DATABASE ${quoteIdent(databases.c)} TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER libc LOCALE 'C'`);
  await admin.query(`CREATE DATABASE ${quoteIdent(databases.icu)} TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`);
  plain = createPool({ databaseUrl: urlOf(databases.c), applicationName: 'test', log });
  icu = createPool({ databaseUrl: urlOf(databases.icu), applicationName: 'test', log });
  for (const pool of [plain, icu]) await migrate(pool, { schema, log });
});

afterAll(async () => {
  await icu?.end();
  await plain?.end();
  for (const name of Object.values(databases)) await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  await admin.end();
});

/** A body spelling the plan key three ways, and the status key in capitals only. */
const twice = { planid: 'folded', PlanId: 'declared', planId: 'camel', LIFECYCLESTATUS: 'Active' };

async function answers(pool: ReturnType<typeof createPool>) {
  const s = quoteIdent(schema);
  await appendVersions(pool, schema, [{ type: 'Contract', id: 'c-1', version: 1, at: '2025-01-01T00:00:00Z', body: twice }]);
  const { rows } = await pool.query(
    `SELECT (SELECT fields FROM ${s}.version_facts WHERE resource_id = 'c-1') AS version_facts,
            (SELECT fields FROM ${s}.current_facts WHERE resource_id = 'c-1') AS current_facts,
            (SELECT plan_id FROM ${s}.contract_current WHERE resource_id = 'c-1') AS typed_column,
            ${s}.version_fact_fields(ARRAY['planid', 'lifecyclestatus'], $1::jsonb) AS version_fact_fields,
            ${s}.metric_fields($1::jsonb, ARRAY['planid', 'lifecyclestatus']) AS metric_fields`,
    [JSON.stringify(twice)],
  );
  return rows[0];
}

describe('the database\'s collation', () => {
  it('is C in one database and ICU en-US in the other (lower case sorts first there)', async () => {
    const order = async (pool: ReturnType<typeof createPool>) => (await pool.query(`SELECT array_agg(k ORDER BY k) AS o FROM unnest(ARRAY['PlanId', 'planid']) AS k`)).rows[0].o;
    expect(await order(icu)).toEqual(['planid', 'PlanId']);
    expect(await order(plain)).toEqual(['PlanId', 'planid']);
  });

  it('does not decide which spelling of a key the facts keep: capitals first, as the typed columns read it, in both', async () => {
    const expected = { planid: 'declared', lifecyclestatus: 'Active' };
    for (const pool of [plain, icu]) {
      const a = await answers(pool);
      expect(a.version_facts).toMatchObject(expected);
      expect(a.current_facts).toMatchObject(expected);
      expect(a.typed_column).toBe('declared');
      expect(a.version_fact_fields).toEqual(expected);
      expect(a.metric_fields).toEqual(expected);
    }
  });
});
