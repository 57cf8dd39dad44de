#!/usr/bin/env node
// The MRR views' cost (docs/WAREHOUSE.md#mrr-in-money-mrr_daily-mrr_movements-mrr_monthly). Not a
// test: it measures and prints.
//
//   npm run --silent build && node bench/warehouse/mrr-views.mjs --from <schema> [--copies N] [--runs R] [--keep]
//
// Copies the versions of a warehouse schema that holds a loaded history (e.g. one filled by
// `billing-loader demo`, or the sandbox scenario's of an integration test run kept with
// --keep) N times (default 50) into a fresh schema, each copy's contracts and customers under
// ids of their own and the catalog once, so that the contracts' lives, phases and prices are
// real ones; then times a SELECT count(*) of mrr_daily (whole and yesterday), mrr_movements and mrr_monthly, the median
// of R runs (default 3), first as loaded (every contract listed, computed at the read), then after
// the refresh a sink runs (the kept rows read). DATABASE_URL from the environment; the schema is dropped unless --keep.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { migrate } from '../../dist/db/migrate.js';
import { createPool, quoteIdent } from '../../dist/db/pool.js';
import { createLogger } from '../../dist/log.js';
import { refreshMetrics } from '../../dist/warehouse/metric-refresh.js';

const { values } = parseArgs({ options: { from: { type: 'string' }, copies: { type: 'string', default: '50' }, runs: { type: 'string', default: '3' }, keep: { type: 'boolean', default: false } } });
if (!values.from) throw new Error('--from <schema> is required: a warehouse schema with a loaded history');
const copies = Number(values.copies);
const runs = Number(values.runs);
const log = createLogger('warn');
const pool = createPool({ databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:15432/postgres', applicationName: 'bench-mrr', log });
const schema = `bench_mrr_${randomBytes(3).toString('hex')}`;
const s = quoteIdent(schema);
const from = quoteIdent(values.from);
const CATALOG = "('Plan', 'PlanVariant', 'PlanGroup', 'Component')";

try {
  await migrate(pool, { schema, log });
  const t0 = performance.now();
  await pool.query(
    `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset, loaded_at)
     SELECT r.resource_type,
            CASE WHEN k = 0 OR r.resource_type IN ${CATALOG} THEN r.resource_id ELSE r.resource_id || '-' || k END,
            r.version, r.fetched_at, r.deleted,
            CASE WHEN k > 0 AND r.resource_type = 'Contract' AND r.body ? 'CustomerId'
                 THEN jsonb_set(r.body, '{CustomerId}', to_jsonb((r.body ->> 'CustomerId') || '-' || k)) ELSE r.body END,
            r.content_hash, '{}', '{}', CASE WHEN k = 0 THEN r.customer_id ELSE r.customer_id || '-' || k END, 0, row_number() OVER (), r.loaded_at
       FROM ${from}.resource_versions r CROSS JOIN generate_series(0, $1::int - 1) AS k
      WHERE k = 0 OR r.resource_type NOT IN ${CATALOG}`,
    [copies],
  );
  await pool.query(`ANALYZE ${s}.resource_versions`);
  const { rows } = await pool.query(`SELECT (SELECT count(*) FROM ${s}.contract_current)::int AS contracts, (SELECT count(*) FROM ${s}.resource_versions)::int AS versions`);
  console.log(`schema ${schema}: ${rows[0].versions} versions, ${rows[0].contracts} contracts (${copies} copies of ${values.from}), loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const timeViews = async (state) => {
    const forms = [
      ['mrr_daily', `${s}.mrr_daily`],
      ['mrr_daily, yesterday', `${s}.mrr_daily WHERE day = (now() AT TIME ZONE 'UTC')::date - 1`],
      ['mrr_movements', `${s}.mrr_movements`],
      ['mrr_monthly', `${s}.mrr_monthly`],
    ];
    for (const [view, from] of forms) {
      const times = [];
      let n = 0;
      for (let i = 0; i < runs; i++) {
        const t = performance.now();
        n = (await pool.query(`SELECT count(*)::int AS n FROM ${from}`)).rows[0].n;
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      console.log(`${view} (${state}): ${n} rows, median ${(times[Math.floor(times.length / 2)] / 1000).toFixed(3)} s of ${runs} (min ${(times[0] / 1000).toFixed(3)}, max ${(times.at(-1) / 1000).toFixed(3)})`);
    }
  };
  // As loaded: every contract listed by the trigger, so every answer is computed at the read.
  await timeViews('every contract listed');
  // As a sink leaves it: the listed contracts refreshed into the kept rows.
  const t1 = performance.now();
  const refreshed = await refreshMetrics(pool, schema);
  console.log(`refreshed ${refreshed?.refreshed} contracts, transactions, plan variants and customers in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
  await timeViews('refreshed');
} finally {
  if (!values.keep) await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
}
