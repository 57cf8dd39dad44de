import type pg from 'pg';
import { RESOURCE_TYPES, type ResourceType } from '../billing-api/resource-types.js';
import { quoteIdent } from '../db/pool.js';
import type { Logger } from '../log.js';
import { keyPath, type TypedColumns } from './typed-columns.js';

/**
 * Body keys the metric views (warehouse/metric-views.sql) read from version_facts.fields, beside
 * the typed columns' keys. Every `f -> '<key>'` of that file must be listed here (lower-cased
 * there); a unit test checks it.
 */
export const METRIC_FACT_KEYS: Readonly<Partial<Record<ResourceType, readonly string[]>>> = {
  Contract: ['CustomerId', 'PlanId', 'StartDate', 'EndDate', 'Phases', 'LifecycleStatus'],
  Dunning: ['ContractId', 'CustomerId', 'DocumentDate', 'DunningLevel'],
  PaymentTransaction: ['Status', 'StatusTimestamp', 'Amount', 'Currency', 'PaymentProvider', 'ContractId'],
};

/** The key a field is stored under in version_facts.fields (one spelling for every letter case). */
export const factKey = (key: string): string => key.toLowerCase();

/**
 * Per type, the body keys version_facts.fields holds, in lower case, sorted: the typed columns'
 * (the top-level key of a nested one: its object is kept whole) and the metric views'.
 */
export function factKeys(typed: TypedColumns): Record<ResourceType, string[]> {
  const out = {} as Record<ResourceType, string[]>;
  for (const type of RESOURCE_TYPES) {
    out[type] = [...new Set([...typed[type].map((c) => keyPath(c.key)[0]!), ...(METRIC_FACT_KEYS[type] ?? [])].map(factKey))].sort();
  }
  return out;
}

/** Versions per UPDATE when re-extracting: a progress line each, and bounded work per statement. */
const CHUNK_ROWS = 50_000;

/**
 * Inside the caller's transaction (migrate's analyst step): writes the key lists of `typed` and
 * the metric views to version_facts_keys (which the append trigger reads) and re-extracts the
 * stored fields (closed_version_facts' and current_facts', or version_facts' and then
 * current_facts' from them in a warehouse before migration 0025, and for contracts the counts of
 * contract_state_days) of every type whose list changed (all of them after migration 0005 on a
 * non-empty warehouse), whole resources at a time with a progress line each. Appends wait
 * meanwhile (SHARE lock), so no version is appended with the old list after its re-extraction.
 * Returns the types re-extracted.
 */
export async function refreshVersionFacts(client: pg.PoolClient, schema: string, typed: TypedColumns, log: Logger): Promise<ResourceType[]> {
  const s = quoteIdent(schema);
  const keys = factKeys(typed);
  const { rows } = await client.query<{ resource_type: string; keys: string[] }>(`SELECT resource_type, keys FROM ${s}.version_facts_keys`);
  const recorded = new Map(rows.map((r) => [r.resource_type, [...r.keys].sort().join('\u0000')]));
  const changed = RESOURCE_TYPES.filter((t) => recorded.get(t) !== keys[t].join('\u0000'));
  if (changed.length === 0) return [];
  await client.query(`LOCK TABLE ${s}.resource_versions IN SHARE MODE`);
  // Since migration 0025 the facts are two tables, the closed versions' and the latest's, and
  // version_facts a view of both; a warehouse migrated from an older release's files has the one table.
  const exists = async (relation: string): Promise<boolean> => (await client.query(`SELECT to_regclass($1) AS t`, [`${s}.${relation}`])).rows[0].t !== null;
  const split = await exists('closed_version_facts');
  const tables = split ? ['closed_version_facts', 'current_facts'] : ['version_facts'];
  for (const type of changed) {
    await client.query(
      `INSERT INTO ${s}.version_facts_keys (resource_type, keys) VALUES ($1, $2) ON CONFLICT (resource_type) DO UPDATE SET keys = EXCLUDED.keys`,
      [type, keys[type]],
    );
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
      for (const table of tables) {
        const updated = await client.query(
          `UPDATE ${s}.${table} f SET fields = ${s}.version_fact_fields($4, r.body)
             FROM ${s}.resource_versions r
            WHERE f.resource_type = $1 AND f.resource_id > $2 AND f.resource_id <= $3
              AND r.resource_type = f.resource_type AND r.resource_id = f.resource_id AND r.version = f.version`,
          [type, after, upTo, keys[type]],
        );
        done += updated.rowCount ?? 0;
      }
      after = upTo;
      log.info('version facts re-extracted', { schema, resourceType: type, versions: done, of: total });
    }
    if (!split) {
      await client.query(
        `UPDATE ${s}.current_facts c SET fields = f.fields
           FROM ${s}.version_facts f
          WHERE c.resource_type = $1
            AND f.resource_type = c.resource_type AND f.resource_id = c.resource_id AND f.version = c.version
            AND c.fields IS DISTINCT FROM f.fields`,
        [type],
      );
    }
    // The contract counts are keyed by two of these fields: count them again from the new ones
    // (when migrated from a directory of an older release's files, there are none to count).
    if (type === 'Contract' && (await exists('contract_state_days'))) {
      await client.query(`DELETE FROM ${s}.contract_state_deltas`);
      await client.query(`DELETE FROM ${s}.contract_state_days`);
      await client.query(`INSERT INTO ${s}.contract_state_days (day, status, plan_id, delta) SELECT * FROM ${s}.contract_state_days_from_facts()`);
    }
  }
  return changed;
}
