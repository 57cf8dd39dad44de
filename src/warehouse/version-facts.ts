import type pg from 'pg';
import { RESOURCE_TYPES, type ResourceType } from '../billing-api/resource-types.js';
import { quoteIdent } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { TypedColumns } from './typed-columns.js';

/**
 * Body keys the metric views (warehouse/metric-views.sql) read from version_facts.fields, beside
 * the typed columns' keys. Every `f -> '<key>'` of that file must be listed here (lower-cased
 * there); a unit test checks it.
 */
export const METRIC_FACT_KEYS: Readonly<Partial<Record<ResourceType, readonly string[]>>> = {
  Contract: ['PlanId', 'StartDate', 'TrialEndDate', 'CancellationDate', 'EndDate', 'Phases', 'LifecycleStatus'],
  Order: ['OrderType', 'Status', 'ContractId', 'CreatedAt', 'CompletedAt'],
  Dunning: ['ContractId', 'CustomerId', 'PaymentEscalationProcessId', 'DocumentDate', 'DunningLevel'],
  PaymentTransaction: ['Status', 'Amount', 'Currency', 'PaymentProvider', 'CreatedAt', 'CompletedAt'],
  PaymentEscalationProcess: ['ContractId', 'CustomerId', 'StartedAt', 'TriggerDays', 'Steps', 'ResetAt', 'Status'],
};

/** The key a field is stored under in version_facts.fields (one spelling for every letter case). */
export const factKey = (key: string): string => key.toLowerCase();

/**
 * Per type, the body keys version_facts.fields holds: the typed columns' first, then the metric
 * views', one declared spelling per lower-case key (the first declared wins), in that order.
 */
export function factKeys(typed: TypedColumns): Record<ResourceType, string[]> {
  const out = {} as Record<ResourceType, string[]>;
  for (const type of RESOURCE_TYPES) {
    const byFolded = new Map<string, string>();
    for (const key of [...typed[type].map((c) => c.key), ...(METRIC_FACT_KEYS[type] ?? [])]) {
      if (!byFolded.has(factKey(key))) byFolded.set(factKey(key), key);
    }
    out[type] = [...byFolded.values()];
  }
  return out;
}

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * version_fact_fields(resource_type, body): the body's top-level keys of the type's list, keyed in
 * lower case, matched in any letter case with wh_field's preference when a body spells one key
 * twice (the declared spelling, then camelCase, then lower case, then any other; the aggregate
 * keeps the last value of a repeated key). NULL when the body is not an object or has none.
 * One pass over the body's keys: a lookup per key would scan the body again for every key it lacks.
 */
export function factFieldsFunctionSql(schema: string, keys: Record<ResourceType, string[]>): string {
  const rows = RESOURCE_TYPES.flatMap((type) =>
    keys[type].map((key) => `(${lit(type)}, ${lit(factKey(key))}, ${lit(key)}, ${lit(key.charAt(0).toLowerCase() + key.slice(1))})`),
  );
  const body =
    rows.length === 0
      ? 'RETURN NULL::jsonb'
      : `RETURN (SELECT jsonb_object_agg(k.folded, e.value ORDER BY CASE e.key WHEN k.exact THEN 3 WHEN k.camel THEN 2 WHEN k.folded THEN 1 ELSE 0 END)
          FROM jsonb_each(CASE WHEN jsonb_typeof(body) = 'object' THEN body END) AS e
          JOIN (VALUES ${rows.join(',\n                       ')}) AS k(resource_type, folded, exact, camel)
            ON k.resource_type = version_fact_fields.resource_type AND k.folded = lower(e.key))`;
  return `CREATE OR REPLACE FUNCTION ${quoteIdent(schema)}.version_fact_fields(resource_type text, body jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
${body}`;
}

/** Resources per UPDATE when re-extracting: a progress line each, and bounded work per statement. */
const CHUNK_ROWS = 50_000;

/**
 * Inside the caller's transaction (migrate's analyst step): replaces version_fact_fields with the
 * key lists of `typed` and the metric views, and re-extracts the stored fields of every type whose
 * key list differs from the one recorded (all of them after migration 0005 on a non-empty
 * warehouse), recording the new list. Appends wait meanwhile (SHARE lock), so no version gets
 * fields from the old list after its re-extraction. Returns the types re-extracted.
 */
export async function refreshVersionFacts(client: pg.PoolClient, schema: string, typed: TypedColumns, log: Logger): Promise<ResourceType[]> {
  const s = quoteIdent(schema);
  const keys = factKeys(typed);
  const { rows } = await client.query<{ resource_type: string; keys: string[] }>(`SELECT resource_type, keys FROM ${s}.version_facts_keys`);
  const recorded = new Map(rows.map((r) => [r.resource_type, r.keys.join('\u0000')]));
  const changed = RESOURCE_TYPES.filter((t) => recorded.get(t) !== keys[t].join('\u0000'));
  if (changed.length === 0) return [];
  await client.query(`LOCK TABLE ${s}.resource_versions IN SHARE MODE`);
  await client.query(factFieldsFunctionSql(schema, keys));
  for (const type of changed) {
    const total = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${s}.version_facts WHERE resource_type = $1`, [type])).rows[0]!.n);
    let done = 0;
    let after = '';
    while (done < total) {
      // Whole resources per chunk: the upper bound is the resource of the CHUNK_ROWS-th version.
      const bound = await client.query<{ id: string | null }>(
        `SELECT max(resource_id) AS id FROM (SELECT resource_id FROM ${s}.version_facts WHERE resource_type = $1 AND resource_id > $2 ORDER BY resource_id LIMIT ${CHUNK_ROWS}) x`,
        [type, after],
      );
      const upTo = bound.rows[0]?.id;
      if (upTo === null || upTo === undefined) break;
      const updated = await client.query(
        `UPDATE ${s}.version_facts f SET fields = ${s}.version_fact_fields(r.resource_type, r.body)
           FROM ${s}.resource_versions r
          WHERE f.resource_type = $1 AND f.resource_id > $2 AND f.resource_id <= $3
            AND r.resource_type = f.resource_type AND r.resource_id = f.resource_id AND r.version = f.version`,
        [type, after, upTo],
      );
      done += updated.rowCount ?? 0;
      after = upTo;
      log.info('version facts re-extracted', { schema, resourceType: type, versions: done, of: total });
    }
    await client.query(
      `INSERT INTO ${s}.version_facts_keys (resource_type, keys) VALUES ($1, $2) ON CONFLICT (resource_type) DO UPDATE SET keys = EXCLUDED.keys`,
      [type, keys[type]],
    );
  }
  return changed;
}
