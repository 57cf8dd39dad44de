import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { quoteIdent } from '../db/pool.js';
import { UserError } from '../errors.js';
import { packageRoot } from '../package-root.js';
import { ANALYST_ROLE, WRITER_ROLE } from './resource-types.js';

/** The metric views' SQL (shipped in the package): one CREATE VIEW per view, helpers first. */
export const metricViewsFile = join(packageRoot, 'warehouse', 'metric-views.sql');

/** The public metric views (docs/CONTRACT.md section 7): the dbt package's billing_metrics sources. */
export const METRIC_VIEWS = ['contract_daily', 'subscription_movements', 'trial_cohorts', 'dunning_episodes', 'payment_escalation_episodes', 'payment_outcomes', 'pipeline_health', 'mrr_daily', 'mrr_movements', 'mrr_monthly', 'subscription_overview', 'customer_overview', 'contract_segments'] as const;

const CREATE_VIEW = /^CREATE VIEW ([a-z_][a-z0-9_]*) AS/gm;
const CREATE_FUNCTION = /^CREATE FUNCTION ([a-z_][a-z0-9_]*)\(/gm;

export interface MetricViewsSql {
  sql: string;
  /** Every view the file creates, helpers (metric_*) included, in its order. */
  views: string[];
  /** The functions the file creates after its first view (one per name, unique in the schema), in its order: they may read the views. */
  functions: string[];
  /** The file is the one shipped with this release (not an earlier release's, as an upgrade test gives). */
  packaged: boolean;
}

export async function loadMetricViewsSql(file = metricViewsFile): Promise<MetricViewsSql> {
  const sql = await readFile(file, 'utf8');
  // The functions created after the first view may read views: migrate drops them before the views.
  const afterViews = sql.slice(Math.max(0, sql.search(/^CREATE VIEW /m)));
  return { sql, views: [...sql.matchAll(CREATE_VIEW)].map((m) => m[1]!), functions: [...new Set([...afterViews.matchAll(CREATE_FUNCTION)].map((m) => m[1]!))], packaged: file === metricViewsFile };
}

/**
 * Drops the metric views (and their helpers), and the functions the file creates, inside the caller's transaction. They read the
 * typed-column views, which migrate may DROP and CREATE when the mapping changes: they go first.
 * Helpers an earlier release created and the file no longer has (metric_*) go too, or one of
 * them would block that DROP; so do the functions named metric_* that the file no longer creates
 * (one reading a kept table would block the table's DROP). A function may read views (its
 * SQL-standard body depends on them) and a view may call a function: each object goes once
 * nothing left depends on it.
 */
export async function dropMetricViews(client: pg.PoolClient, schema: string, views: readonly string[], functions: readonly string[] = []): Promise<void> {
  // The listing triggers first: they run functions dropped below.
  for (const [table, trigger] of [['resource_versions', MARK_TRIGGER], ...EPISODE_TRIGGERS]) {
    await client.query(`DROP TRIGGER IF EXISTS ${quoteIdent(trigger)} ON ${quoteIdent(schema)}.${quoteIdent(table)}`);
  }
  const { rows } = await client.query<{ name: string }>(`SELECT viewname AS name FROM pg_views WHERE schemaname = $1 AND viewname LIKE 'metric\\_%'`, [schema]);
  const viewNames = [...new Set([...METRIC_VIEWS, ...views, ...rows.map((r) => r.name)])];
  // Each view and function there is, with the ones of them that depend on it (a view's
  // dependencies are its rewrite rule's).
  const { rows: objects } = await client.query<{ key: string; kind: 'v' | 'f'; name: string; dependents: string[] }>(
    `WITH objects AS (
       SELECT 'v' || c.oid AS key, 'v' AS kind, c.relname::text AS name FROM pg_class c
        WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'v' AND c.relname = ANY ($2::text[])
       UNION ALL
       SELECT 'f' || p.oid, 'f', p.proname::text FROM pg_proc p
        WHERE p.pronamespace = $1::regnamespace AND (p.proname = ANY ($3::text[]) OR p.proname LIKE 'metric\\_%')
     ), edges AS (
       SELECT CASE WHEN d.classid = 'pg_rewrite'::regclass THEN 'v' || r.ev_class ELSE 'f' || d.objid END AS dependent,
              CASE WHEN d.refclassid = 'pg_class'::regclass THEN 'v' ELSE 'f' END || d.refobjid AS referenced
         FROM pg_depend d
         LEFT JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
        WHERE d.classid IN ('pg_rewrite'::regclass, 'pg_proc'::regclass) AND d.refclassid IN ('pg_class'::regclass, 'pg_proc'::regclass)
     )
     SELECT o.key, o.kind, o.name,
            ARRAY(SELECT DISTINCT e.dependent FROM edges e JOIN objects x ON x.key = e.dependent WHERE e.referenced = o.key AND e.dependent <> o.key) AS dependents
       FROM objects o`,
    [schema, viewNames, [...functions]],
  );
  const left = new Map(objects.map((o) => [o.key, o]));
  while (left.size > 0) {
    const free = [...left.values()].filter((o) => o.dependents.every((d) => !left.has(d)));
    if (free.length === 0) throw new Error(`the metric views and functions depend on each other in a cycle: ${[...left.values()].map((o) => o.name).join(', ')}`);
    const named = (kind: 'v' | 'f') => free.filter((o) => o.kind === kind).map((o) => `${quoteIdent(schema)}.${quoteIdent(o.name)}`);
    if (named('f').length > 0) await client.query(`DROP FUNCTION ${named('f').join(', ')}`);
    if (named('v').length > 0) await client.query(`DROP VIEW ${named('v').join(', ')}`);
    for (const o of free) left.delete(o.key);
  }
  // What the file keeps at write time: the tables (metric_*: the kept rows and the lists), filled
  // again when the file is applied.
  const { rows: tables } = await client.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'metric\\_%'`, [schema]);
  if (tables.length > 0) await client.query(`DROP TABLE ${tables.map((t) => `${quoteIdent(schema)}.${quoteIdent(t.name)}`).join(', ')}`);
}

/** The trigger on resource_versions that lists the contracts whose kept metric rows are to be computed again (warehouse/metric-views.sql). */
export const MARK_TRIGGER = 'resource_versions_mark_metric_contracts';

/** The triggers that list the contracts and dunnings whose kept episodes are to be computed again (warehouse/metric-views.sql), by table. */
export const EPISODE_TRIGGERS = [
  ['resource_versions', 'resource_versions_mark_metric_episodes'],
  ['webhook_events', 'webhook_events_mark_metric_episodes'],
] as const;

/**
 * Creates the metric views from the file inside the caller's transaction (search_path set to
 * the schema), after the analyst views they read, and grants SELECT on each to both roles, the
 * helpers too: an analyst may reuse a definition, as with every other view of the schema.
 */
export async function createMetricViews(client: pg.PoolClient, schema: string, metrics: MetricViewsSql): Promise<void> {
  // The shipped file must create every public view; an earlier release's file (the upgrade
  // tests migrate with one first) creates the ones of its release.
  const missing = metrics.packaged ? METRIC_VIEWS.filter((v) => !metrics.views.includes(v)) : [];
  if (missing.length > 0) throw new UserError(`warehouse/metric-views.sql does not create ${missing.join(', ')}`);
  try {
    await client.query(metrics.sql);
  } catch (err) {
    // 42703: the typed column mapping no longer has a column the metric views read.
    if ((err as { code?: string }).code === '42703') {
      throw new UserError(`the metric views (warehouse/metric-views.sql) read a typed column the mapping no longer has: ${(err as Error).message}; keep it in the mapping`);
    }
    throw err;
  }
  for (const view of metrics.views) {
    await client.query(`GRANT SELECT ON ${quoteIdent(schema)}.${quoteIdent(view)} TO ${ANALYST_ROLE}, ${WRITER_ROLE}`);
  }
}
