import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RESOURCE_TYPES, type ResourceType } from '../billing-api/resource-types.js';
import { quoteIdent } from '../db/pool.js';
import type { Logger } from '../log.js';
import { analystObjectsSql, caseFolding, createAnalystObjects } from './analyst-views.js';
import { createMetricViews, dropMetricViews, type MetricViewsSql } from './metric-views.js';
import { ANALYST_ROLE, WRITER_ROLE } from './resource-types.js';
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
const APPLY_REVISION = '2';

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

/**
 * The objects (as named in `derivedChecksums`) that are missing from the schema: one dropped by
 * hand is applied again. Catalog reads: they take no lock on the views.
 */
async function missingObjects(client: pg.PoolClient, schema: string, typed: TypedColumns, metrics: MetricViewsSql): Promise<string[]> {
  const { views, functions } = analystObjectsSql(ANY_SCHEMA, typed, false);
  const { rows } = await client.query<{ views: string[]; functions: string[] }>(
    `SELECT ARRAY(SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'v') AS views,
            ARRAY(SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1) AS functions`,
    [schema],
  );
  const haveViews = new Set(rows[0]!.views);
  const haveFunctions = new Set(rows[0]!.functions);
  return [
    ...views.filter(([name]) => !haveViews.has(name)).map(([name]) => `view ${name}`),
    ...functions.filter(([name]) => !haveFunctions.has(name)).map(([name]) => `function ${name}`),
    ...(metrics.views.every((v) => haveViews.has(v)) ? [] : ['metric views']),
  ];
}

export type DerivedObjectsOutcome = 'recreated' | 'unchanged';

export interface DerivedObjectsResult {
  outcome: DerivedObjectsOutcome;
  /** The objects whose definitions changed (or that were missing), as named in schema_derived_objects. */
  changed: string[];
  /** Whether every object was re-created (the metric views' file changed, or a view had to be dropped). */
  all: boolean;
  factsReextracted: ResourceType[];
}

/** SQLSTATEs of a CREATE OR REPLACE VIEW that removes, renames, reorders a column or changes its type. */
const NEEDS_DROP = new Set(['42P16', '42804']);

/**
 * Applies only the changed analyst views and functions, leaving every other view alone, when
 * each changed view only gains columns (CREATE OR REPLACE VIEW). A view that must be dropped
 * fails with 42P16 or 42804, and the caller falls back to re-creating everything.
 */
async function applyChanged(client: pg.PoolClient, schema: string, typed: TypedColumns, folding: boolean, changed: ReadonlySet<string>, log: Logger): Promise<ResourceType[]> {
  const s = quoteIdent(schema);
  const { views, functions } = analystObjectsSql(schema, typed, folding);
  const changedFunctions = functions.filter(([name]) => changed.has(`function ${name}`));
  // A function's result columns follow its view's: it is dropped and created again around the view.
  for (const [name] of changedFunctions) await client.query(`DROP FUNCTION IF EXISTS ${s}.${quoteIdent(name)}(timestamptz)`);
  const reextracted = await refreshVersionFacts(client, schema, typed, log);
  for (const [name, sql] of views.filter(([n]) => changed.has(`view ${n}`))) {
    await client.query(`CREATE OR REPLACE VIEW ${s}.${quoteIdent(name)} AS ${sql}`);
    await client.query(`GRANT SELECT ON ${s}.${quoteIdent(name)} TO ${ANALYST_ROLE}, ${WRITER_ROLE}`);
  }
  for (const [, sql] of changedFunctions) await client.query(sql);
  return reextracted;
}

/**
 * Inside migrate's locked transaction (search_path set to the schema): applies the analyst
 * views and functions, the fact key lists and the metric views whose definitions differ from
 * the ones recorded in schema_derived_objects, or that are missing, and records the new
 * checksums. With nothing changed it changes nothing and takes no lock on any view, so a
 * migrate with nothing new never waits for, nor queues, the warehouse's readers.
 *
 * A changed view that only gains columns (a typed column added) is replaced alone, with its
 * `<t>_as_of`: the readers of every other view, the metric views included, are not disturbed.
 * When the metric views' file changed, or a changed view must be dropped (a column removed,
 * moved or retyped), everything is applied as before in this one transaction: the metric views
 * dropped first and created last, around the analyst views, the facts re-extracted when their
 * keys changed.
 */
export async function refreshDerivedObjects(client: pg.PoolClient, schema: string, typed: TypedColumns, metrics: MetricViewsSql, log: Logger): Promise<DerivedObjectsResult> {
  const folding = await caseFolding(client, schema);
  const wanted = derivedChecksums(typed, folding, metrics);
  const { rows } = await client.query<{ object: string; checksum: string }>(`SELECT object, checksum FROM ${quoteIdent(schema)}.${DERIVED_OBJECTS_TABLE}`);
  const recorded = new Map(rows.map((r) => [r.object, r.checksum]));
  const changed = new Set([...[...wanted].filter(([object, checksum]) => recorded.get(object) !== checksum).map(([object]) => object), ...(await missingObjects(client, schema, typed, metrics))]);
  if (changed.size === 0) return { outcome: 'unchanged', changed: [], all: false, factsReextracted: [] };

  let factsReextracted: ResourceType[] | undefined;
  if (!changed.has('revision') && !changed.has('metric views')) {
    await client.query('SAVEPOINT derived_changed');
    try {
      factsReextracted = await applyChanged(client, schema, typed, folding, changed, log);
      await client.query('RELEASE SAVEPOINT derived_changed');
    } catch (err) {
      if (!NEEDS_DROP.has((err as { code?: string }).code ?? '')) throw err;
      await client.query('ROLLBACK TO SAVEPOINT derived_changed');
    }
  }
  const all = factsReextracted === undefined;
  if (all) {
    await dropMetricViews(client, schema, metrics.views, metrics.functions);
    factsReextracted = await refreshVersionFacts(client, schema, typed, log);
    await createAnalystObjects(client, schema, typed);
    await createMetricViews(client, schema, metrics);
  }
  await client.query(`DELETE FROM ${quoteIdent(schema)}.${DERIVED_OBJECTS_TABLE}`);
  await client.query(`INSERT INTO ${quoteIdent(schema)}.${DERIVED_OBJECTS_TABLE} (object, checksum) SELECT * FROM unnest($1::text[], $2::text[])`, [[...wanted.keys()], [...wanted.values()]]);
  return { outcome: 'recreated', changed: [...changed].sort(), all, factsReextracted: factsReextracted ?? [] };
}
