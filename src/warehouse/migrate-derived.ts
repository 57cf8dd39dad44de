import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RESOURCE_TYPES } from '../billing-api/resource-types.js';
import { quoteIdent } from '../db/pool.js';
import type { Logger } from '../log.js';
import { analystObjectsSql, caseFolding, createAnalystObjects } from './analyst-views.js';
import { createMetricViews, dropMetricViews, type MetricViewsSql } from './metric-views.js';
import type { TypedColumns } from './typed-columns.js';
import { factKeys, refreshVersionFacts } from './version-facts.js';

/**
 * The bookkeeping table of the derived objects (the analyst views and functions, the metric
 * views, the fact key lists): one row per object with the checksum of the definition last
 * applied. Created by migrate itself, like schema_migrations: it belongs to migrate's own
 * bookkeeping, not to the warehouse's history.
 */
export const DERIVED_OBJECTS_TABLE = 'schema_derived_objects';

/**
 * Bumped when the way the objects are applied changes without their text changing (a grant,
 * say), so that every warehouse applies them once more.
 */
const APPLY_REVISION = '1';

/** The definitions' checksums are taken with this schema name in place of the real one: a rebuild's renamed schema keeps them. */
const ANY_SCHEMA = 'schema';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export async function ensureDerivedObjectsTable(client: pg.PoolClient, schema: string): Promise<void> {
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.${DERIVED_OBJECTS_TABLE} (object text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
}

/** What the derived objects should be: object name → checksum of its definition. */
export function derivedChecksums(typed: TypedColumns, folding: boolean, metrics: MetricViewsSql): Map<string, string> {
  const { views, functions } = analystObjectsSql(ANY_SCHEMA, typed, folding);
  const keys = factKeys(typed);
  return new Map([
    ['revision', APPLY_REVISION],
    ...views.map(([name, sql]): [string, string] => [`view ${name}`, sha256(sql)]),
    ...functions.map(([name, sql]): [string, string] => [`function ${name}`, sha256(sql)]),
    ['metric views', sha256(metrics.sql)],
    ...RESOURCE_TYPES.map((type): [string, string] => [`fact keys ${type}`, sha256(keys[type].join('\n'))]),
  ]);
}

/** Whether every view and function the definitions name is there (one dropped by hand is re-created). */
async function allPresent(client: pg.PoolClient, schema: string, typed: TypedColumns, metrics: MetricViewsSql): Promise<boolean> {
  const { views, functions } = analystObjectsSql(ANY_SCHEMA, typed, false);
  const viewNames = [...views.map(([name]) => name), ...metrics.views];
  const functionNames = functions.map(([name]) => name);
  // Catalog reads: they take no lock on the views.
  const { rows } = await client.query<{ views: number; functions: number }>(
    `SELECT (SELECT count(DISTINCT c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'v' AND c.relname = ANY ($2))::int AS views,
            (SELECT count(DISTINCT p.proname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = ANY ($3))::int AS functions`,
    [schema, viewNames, functionNames],
  );
  return rows[0]!.views === new Set(viewNames).size && rows[0]!.functions === functionNames.length;
}

export type DerivedObjectsOutcome = 'recreated' | 'unchanged';

/**
 * Inside migrate's locked transaction (search_path set to the schema): applies the analyst
 * views and functions, the fact key lists and the metric views when their definitions differ
 * from the ones recorded in schema_derived_objects, or one of them is missing, and records the
 * new checksums. Otherwise it changes nothing and takes no lock on any view, so a migrate with
 * nothing new never waits for, nor queues, the warehouse's readers.
 *
 * When something changed, everything is applied as before, in this one transaction: the metric
 * views dropped first and created last, around the analyst views (a view a mapping change
 * replaces must not have them depending on it), the facts re-extracted when their keys changed.
 */
export async function refreshDerivedObjects(client: pg.PoolClient, schema: string, typed: TypedColumns, metrics: MetricViewsSql, log: Logger): Promise<{ outcome: DerivedObjectsOutcome; views: number; functions: number; factsReextracted: string[] }> {
  const wanted = derivedChecksums(typed, await caseFolding(client, schema), metrics);
  const { rows } = await client.query<{ object: string; checksum: string }>(`SELECT object, checksum FROM ${quoteIdent(schema)}.${DERIVED_OBJECTS_TABLE}`);
  const recorded = new Map(rows.map((r) => [r.object, r.checksum]));
  const same = recorded.size === wanted.size && [...wanted].every(([object, checksum]) => recorded.get(object) === checksum);
  if (same && (await allPresent(client, schema, typed, metrics))) return { outcome: 'unchanged', views: 0, functions: 0, factsReextracted: [] };

  await dropMetricViews(client, schema, metrics.views);
  const factsReextracted = await refreshVersionFacts(client, schema, typed, log);
  const objects = await createAnalystObjects(client, schema, typed);
  await createMetricViews(client, schema, metrics);
  await client.query(`DELETE FROM ${quoteIdent(schema)}.${DERIVED_OBJECTS_TABLE}`);
  await client.query(`INSERT INTO ${quoteIdent(schema)}.${DERIVED_OBJECTS_TABLE} (object, checksum) SELECT * FROM unnest($1::text[], $2::text[])`, [[...wanted.keys()], [...wanted.values()]]);
  return { outcome: 'recreated', views: objects.views.length + metrics.views.length, functions: objects.functions.length, factsReextracted };
}
