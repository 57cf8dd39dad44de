import type pg from 'pg';
import { RESOURCE_TYPES, RESOURCE_TYPE_INFO, type ResourceType } from '../billing-api/resource-types.js';
import { quoteIdent } from '../db/pool.js';
import { keyPath, type TypedColumn, type TypedColumns } from './typed-columns.js';
import { factKey, factKeys } from './version-facts.js';

/** Names of the analyst layer's per-type objects (docs/CONTRACT.md section 5). */
export function changesView(type: ResourceType): string {
  return `${RESOURCE_TYPE_INFO[type].table}_changes`;
}

export function asOfFunction(type: ResourceType): string {
  return `${RESOURCE_TYPE_INFO[type].table}_as_of`;
}

export const LATEST_VIEW = 'resource_latest';
export const TYPED_COLUMN_ERRORS_VIEW = 'typed_column_errors';

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The typed value of one column of the version whose facts row is `f` (migration 0005). */
function typedValue(f: string, c: TypedColumn): string {
  return `wh_as_${c.type}(${fieldValue(f, c)})`;
}

/**
 * The top-level key is stored in lower case once, when the version was appended: any letter case
 * of the body matches. Each nested step is looked up in its object the way wh_field does (the
 * step as declared, in camelCase, in lower case, then any case), so `Status.Status` finds
 * `status.STATUS` as well.
 */
function fieldValue(f: string, c: TypedColumn): string {
  const [top, ...steps] = keyPath(c.key);
  return steps.reduce(
    (expr, step) => `wh_field(${expr}, ${lit(step)}, ${lit(step.charAt(0).toLowerCase() + step.slice(1))}, ${lit(step.toLowerCase())})`,
    `${f}.fields -> ${lit(factKey(top!))}`,
  );
}

/**
 * The columns of `<t>_history`, `<t>_current` (and the rows of `<t>_as_of`) over `f`, a row of
 * version_facts, and `r`, its row of resource_versions. The validity interval and the typed
 * columns come from the narrow facts row; `r` is LEFT JOINed on its primary key, so a query that
 * reads none of its columns (body, lineage, customer_id) does not read resource_versions at all
 * (PostgreSQL removes the join), and one that does decompresses a body only when it selects it.
 */
function versionColumns(type: ResourceType, typed: readonly TypedColumn[]): string {
  return [
    'f.resource_id',
    'f.version',
    'f.valid_from',
    'f.valid_to',
    'f.valid_to IS NULL AS is_current',
    'f.deleted',
    'r.body',
    'r.content_hash',
    'r.source_event_ids[1] AS source_event_id',
    'r.source_events[1] AS source_event',
    ...(type === 'Contract' ? ['r.customer_id'] : []),
    // A join, not `WHERE event_id = ANY (...)`: min() over one table may be planned as a walk of the
    // received_at index, which reads the whole table when the event is old.
    '(SELECT min(w.received_at) FROM unnest(r.source_event_ids) AS e(id) JOIN webhook_events w ON w.event_id = e.id) AS notified_at',
    'r.loaded_at',
    ...typed.map((c) => `${typedValue('f', c)} AS ${quoteIdent(c.column)}`),
  ].join(',\n       ');
}

const VERSION_ROW = `version_facts f
  LEFT JOIN resource_versions r ON r.resource_type = f.resource_type AND r.resource_id = f.resource_id AND r.version = f.version`;

function historySql(type: ResourceType, typed: readonly TypedColumn[]): string {
  return `SELECT ${versionColumns(type, typed)}
  FROM ${VERSION_ROW}
 WHERE f.resource_type = ${lit(type)}`;
}

/**
 * The latest version of each resource from current_facts (one compact row per resource, kept by
 * the append trigger), not version_facts' rows without valid_to: those lie one per page among
 * the older versions, so reading every current resource read a page per resource.
 */
function currentSql(type: ResourceType, typed: readonly TypedColumn[]): string {
  return `SELECT ${versionColumns(type, typed)}
  FROM (SELECT c.resource_type, c.resource_id, c.version, c.valid_from, NULL::timestamptz AS valid_to, c.deleted, c.fields FROM current_facts c) f
  LEFT JOIN resource_versions r ON r.resource_type = f.resource_type AND r.resource_id = f.resource_id AND r.version = f.version
 WHERE f.resource_type = ${lit(type)} AND NOT f.deleted`;
}

/**
 * Not the same value once the letter case of every key inside is folded (migration 0015): the
 * service may change the case of property names without notice (spec 9.3), inside an object or
 * an array of objects too (a contract's Phases). Evaluated only for values that differ as stored.
 */
function sameUpToCase(a: string, b: string, folding: boolean): string {
  if (!folding) return 'true';
  return `((jsonb_typeof(${a}) IN ('object', 'array') OR jsonb_typeof(${b}) IN ('object', 'array')) IS NOT TRUE OR wh_case_folded(${a}) IS DISTINCT FROM wh_case_folded(${b}))`;
}

/**
 * One row per top-level field that differs from the previous stored version, names compared in
 * lower case at any depth (a change of letter case alone, of a field or of a key inside it, is no
 * change). Version 1 has no previous version and
 * gives no row; a deletion lists every field as removed, a re-creation every field as added.
 *
 * Two parts, one per place a field is kept. The fields version_facts holds (`keys`, lower case)
 * are compared there, key by key against the previous version's facts row, reading no body. Every
 * other field is compared on the two stored bodies (a diff of their top-level pairs). A question
 * on one field reads only its part: a condition `field = 'x'` contradicts one part's own
 * condition, `field = ANY (keys)` or `field <> ALL (keys)`, and PostgreSQL proves that at plan
 * time and drops the part, its rows unread. It proves it only for a member of a UNION ALL
 * (constraint_exclusion's default, `partition`, checks appendrel members), hence the empty second
 * member beside the key list and beside the body diff.
 *
 * An earlier version always has a valid_to, so the previous version's condition says so: in
 * version_facts' part of the latest versions (current_facts, valid_to NULL) it is constant false,
 * and PostgreSQL drops that part from the lookup instead of probing it once per version.
 */
function changesSql(type: ResourceType, keys: readonly string[], folding: boolean): string {
  const fields = (body: string) => `SELECT lower(e.key) AS k, e.value FROM jsonb_each(CASE WHEN jsonb_typeof(${body}) = 'object' THEN ${body} END) e`;
  const keyList = keys.length === 0 ? `'{}'::text[]` : `ARRAY[${keys.map(lit).join(', ')}]::text[]`;
  return `SELECT f.resource_id,
       f.version,
       f.valid_from,
       d.field,
       d.old_value,
       d.new_value,
       r.source_event_ids[1] AS source_event_id,
       r.source_events[1] AS source_event
  FROM version_facts f
  JOIN LATERAL (SELECT p.fields FROM version_facts p
                 WHERE p.resource_type = f.resource_type AND p.resource_id = f.resource_id AND p.version < f.version AND p.valid_to IS NOT NULL
                 ORDER BY p.version DESC LIMIT 1) prev ON true
  CROSS JOIN LATERAL (SELECT k.field, prev.fields -> k.field AS old_value, f.fields -> k.field AS new_value
                        FROM (SELECT unnest(${keyList}) AS field
                              UNION ALL
                              SELECT NULL WHERE false) k
                       WHERE k.field = ANY (${keyList})) d
  LEFT JOIN resource_versions r ON r.resource_type = f.resource_type AND r.resource_id = f.resource_id AND r.version = f.version
 WHERE f.resource_type = ${lit(type)} AND d.old_value IS DISTINCT FROM d.new_value AND ${sameUpToCase('d.old_value', 'd.new_value', folding)}
UNION ALL
SELECT r.resource_id,
       r.version,
       r.fetched_at,
       d.field,
       d.old_value,
       d.new_value,
       r.source_event_ids[1],
       r.source_events[1]
  FROM resource_versions r
  JOIN LATERAL (SELECT p.body FROM resource_versions p
                 WHERE p.resource_type = r.resource_type AND p.resource_id = r.resource_id AND p.version < r.version
                 ORDER BY p.version DESC LIMIT 1) prev ON true
  CROSS JOIN LATERAL (SELECT u.field, u.old_value, u.new_value
                        FROM (SELECT COALESCE(nf.k, pf.k) AS field, pf.value AS old_value, nf.value AS new_value
                                FROM (${fields('r.body')}) nf
                                FULL JOIN (${fields('prev.body')}) pf ON pf.k = nf.k
                              UNION ALL
                              SELECT NULL, NULL, NULL WHERE false) u
                       WHERE u.field <> ALL (${keyList}) AND u.old_value IS DISTINCT FROM u.new_value AND ${sameUpToCase('u.old_value', 'u.new_value', folding)}) d
 WHERE r.resource_type = ${lit(type)}`;
}

/** The latest version of every resource, deleted ones included (current_facts). */
function latestSql(): string {
  return `SELECT resource_type, resource_id, version, valid_from, deleted FROM current_facts`;
}

/**
 * Per type and typed column, the versions whose value is present but does not cast to the
 * declared type (the views show NULL for them). It reads the whole history: an operator's check,
 * not an analyst's query.
 */
function errorsSql(typed: TypedColumns): string {
  const parts = RESOURCE_TYPES.filter((t) => typed[t].length > 0).map((type) => {
    const values = typed[type]
      .map((c) => `(${lit(c.column)}, ${lit(c.key)}, ${lit(c.type)}, ${fieldValue('r', c)}, ${typedValue('r', c)} IS NULL)`)
      .join(',\n                ');
    return `SELECT ${lit(RESOURCE_TYPE_INFO[type].table)}::text AS resource, c.column_name::text, c.json_key::text, c.sql_type::text,
       count(*) AS versions, min(r.valid_from) AS first_valid_from, max(r.valid_from) AS last_valid_from,
       (array_agg(r.resource_id ORDER BY r.valid_from DESC, r.resource_id DESC))[1] AS last_resource_id
  FROM version_facts r
  CROSS JOIN LATERAL (VALUES ${values}) c(column_name, json_key, sql_type, value, typed_is_null)
 WHERE r.resource_type = ${lit(type)} AND NOT r.deleted
   AND c.typed_is_null AND jsonb_typeof(c.value) IS DISTINCT FROM 'null' AND c.value IS NOT NULL
 GROUP BY c.column_name, c.json_key, c.sql_type`;
  });
  if (parts.length === 0) {
    return `SELECT NULL::text AS resource, NULL::text AS column_name, NULL::text AS json_key, NULL::text AS sql_type, 0::bigint AS versions,
       NULL::timestamptz AS first_valid_from, NULL::timestamptz AS last_valid_from, NULL::text AS last_resource_id WHERE false`;
  }
  return parts.join('\nUNION ALL\n');
}

/** The greatest finite timestamptz: `<t>_as_of('infinity')` is the current state. */
const LATEST_FINITE = '294276-12-31 23:59:59.999999+00';

/**
 * The state of every resource of the type at `at`: the versions whose interval [valid_from,
 * valid_to) contains it, deleted ones left out. The end is stated as `COALESCE(valid_to,
 * 'infinity') > at`, the expression of closed_version_facts_valid_to (migration 0011), so the
 * planner reads whichever is smaller: the closed versions begun by `at`
 * (closed_version_facts_valid_from) or those still open at it (closed_version_facts_valid_to); the
 * latest versions begun by `at` come from current_facts_valid_from (0025), their valid_to NULL,
 * which the expression makes infinity. `at` is capped at the greatest finite time so that the
 * current versions, open to infinity, are the state at infinity.
 * A SQL-standard body: bound to the views when created (no search_path at call time, and a
 * rebuild's schema rename keeps it working) and inlined into the caller's query, so a filter on
 * a column is applied inside.
 */
function asOfSql(type: ResourceType, schema: string, typed: readonly TypedColumn[]): string {
  const history = quoteIdent(`${RESOURCE_TYPE_INFO[type].table}_history`);
  const columns: [string, string][] = [
    ['resource_id', 'text'], ['version', 'integer'], ['valid_from', 'timestamptz'], ['valid_to', 'timestamptz'], ['is_current', 'boolean'], ['deleted', 'boolean'],
    ['body', 'jsonb'], ['content_hash', 'text'], ['source_event_id', 'uuid'], ['source_event', 'text'],
    ...(type === 'Contract' ? [['customer_id', 'text'] as [string, string]] : []),
    ['notified_at', 'timestamptz'], ['loaded_at', 'timestamptz'],
    ...typed.map((c): [string, string] => [c.column, c.type]),
  ];
  return `CREATE FUNCTION ${quoteIdent(schema)}.${quoteIdent(asOfFunction(type))}("at" timestamptz)
RETURNS TABLE (${columns.map(([name, sqlType]) => `${quoteIdent(name)} ${sqlType}`).join(', ')})
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT ${columns.map(([name]) => `s.${quoteIdent(name)}`).join(', ')}
    FROM ${history} s
   WHERE s.valid_from <= "at" AND COALESCE(s.valid_to, 'infinity') > LEAST("at", ${lit(LATEST_FINITE)}) AND NOT s.deleted;
END`;
}

export interface AnalystObjects {
  views: string[];
  functions: string[];
}

/**
 * Whether the schema has wh_case_folded (migration 0015): migrated from an older release's
 * files, it has none, and <t>_changes compares the stored values as they are.
 */
export async function caseFolding(client: pg.PoolClient, schema: string): Promise<boolean> {
  return (await client.query<{ f: string | null }>(`SELECT to_regprocedure($1) AS f`, [`${quoteIdent(schema)}.wh_case_folded(jsonb)`])).rows[0]?.f != null;
}

/** The analyst layer's definitions: each view's query and each function's CREATE statement, in creation order. */
export function analystObjectsSql(schema: string, typed: TypedColumns, folding: boolean): { views: [string, string][]; functions: [string, string][] } {
  const views: [string, string][] = [[LATEST_VIEW, latestSql()]];
  const kept = factKeys(typed);
  for (const type of RESOURCE_TYPES) {
    const table = RESOURCE_TYPE_INFO[type].table;
    views.push([`${table}_history`, historySql(type, typed[type])], [`${table}_current`, currentSql(type, typed[type])], [changesView(type), changesSql(type, kept[type], folding)]);
  }
  views.push([TYPED_COLUMN_ERRORS_VIEW, errorsSql(typed)]);
  return { views, functions: RESOURCE_TYPES.map((type) => [asOfFunction(type), asOfSql(type, schema, typed[type])]) };
}

/**
 * (Re)creates the analyst layer's views and functions from the typed column mapping, inside the
 * caller's transaction (search_path set to the schema). Views are derived, not history, so they
 * are replaced freely: CREATE OR REPLACE where the columns only grow, otherwise DROP and CREATE
 * (which fails, rolling the migration back, if a user's own view depends on one of ours).
 */
export async function createAnalystObjects(client: pg.PoolClient, schema: string, typed: TypedColumns): Promise<AnalystObjects> {
  const s = quoteIdent(schema);
  const { views, functions: functionSql } = analystObjectsSql(schema, typed, await caseFolding(client, schema));

  // The functions depend on the views (SQL-standard bodies record it): drop them first.
  for (const type of RESOURCE_TYPES) await client.query(`DROP FUNCTION IF EXISTS ${s}.${quoteIdent(asOfFunction(type))}(timestamptz)`);
  for (const [name, sql] of views) {
    await client.query('SAVEPOINT analyst_view');
    try {
      await client.query(`CREATE OR REPLACE VIEW ${s}.${quoteIdent(name)} AS ${sql}`);
      await client.query('RELEASE SAVEPOINT analyst_view');
    } catch (err) {
      // 42P16: columns removed, renamed or reordered; 42804: a column's type changed.
      const code = (err as { code?: string }).code;
      if (code !== '42P16' && code !== '42804') throw err;
      await client.query('ROLLBACK TO SAVEPOINT analyst_view');
      await client.query(`DROP VIEW ${s}.${quoteIdent(name)}`);
      await client.query(`CREATE VIEW ${s}.${quoteIdent(name)} AS ${sql}`);
    }
    await client.query(`GRANT SELECT ON ${s}.${quoteIdent(name)} TO billing_loader_analyst, billing_loader_writer`);
  }
  for (const [, sql] of functionSql) await client.query(sql);
  return { views: views.map(([name]) => name), functions: functionSql.map(([name]) => name) };
}
