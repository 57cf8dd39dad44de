#!/usr/bin/env node
// What the warehouse's facts trigger costs an append (docs/BENCHMARKS.md, "What the trigger
// costs"). Not a test: it measures and prints, and asserts nothing about time.
//
//   npm run bench:trigger-cost -- [--contracts N] [--versions V] [--statement S] [--runs R]
//
// N contracts get V versions each (defaults 10,000 x 4), appended to a fresh warehouse in
// INSERT ... SELECT statements of S rows (default 1,000; all versions of one number before the
// next, as a sink appends in order), timed whole. Each run times, alternated, in a fresh schema
// each: the trigger as migrated ("shipped") and the facts trigger disabled ("no facts trigger",
// the listing triggers still on). Prints the median of each and the
// ratios to the shipped one, then a JSON summary on stdout. Contract bodies carry the documented
// fields, phases and custom fields, about 2 KB as JSON text, as the generated warehouses' do: over
// PostgreSQL's compression threshold, so stored compressed (both sizes are printed).
import { cpus, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { configWithLocalStack } from '../../dist/cli/cli-config.js';
import { migrate } from '../../dist/db/migrate.js';
import { createPool, quoteIdent } from '../../dist/db/pool.js';
import { createLogger } from '../../dist/log.js';
import { median } from './metric-timings.mjs';

const { values: args } = parseArgs({
  options: {
    contracts: { type: 'string', default: '10000' },
    versions: { type: 'string', default: '4' },
    statement: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
  },
});
const CONTRACTS = Number(args.contracts);
const VERSIONS = Number(args.versions);
const STATEMENT = Number(args.statement);
const RUNS = Number(args.runs);
const say = (line) => process.stderr.write(`bench: ${new Date().toISOString().slice(11, 19)} ${line}\n`);

const config = configWithLocalStack({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
const log = createLogger(config.logLevel);
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'bench-trigger-cost', log, max: 2 });
const prefix = `benchtrig_${process.pid}`;
const source = `${prefix}_src`;

const words = ['annual', 'monthly', 'premium', 'seat', 'discount', 'reseller', 'invoice', 'Berlin', 'Zürich', 'support', 'tier', 'renewal'];
/** Version v of contract c: the documented fields, phases, and custom fields: about 2 KB as text. */
function contractBody(c, v) {
  const custom = {};
  for (let i = 0; i < 24; i++) custom[`Field${i}`] = `${words[(c + i) % words.length]} ${words[(c * 7 + v + i) % words.length]} ${(c * 31 + i * 17 + v) % 100000}`;
  return {
    Id: `c-${c}`,
    PlanId: `plan-${c % 7}`,
    PlanVariantId: `variant-${(c + v) % 21}`,
    PlanGroupId: 'group-1',
    CustomerId: `cust-${c}`,
    CustomerName: `Kunde ${c}`,
    ExternalId: `CRM-${100000 + c}`,
    ReferenceCode: `REF-${c}-${v}`,
    Currency: ['EUR', 'CHF', 'USD'][c % 3],
    LifecycleStatus: v === VERSIONS && c % 5 === 0 ? 'Inactive' : 'Active',
    StartDate: '2025-01-01T00:00:00.0000000Z',
    EndDate: v === VERSIONS && c % 5 === 0 ? '2025-12-31T00:00:00.0000000Z' : null,
    LastBillingDate: `2025-0${1 + (v % 9)}-01T00:00:00.0000000Z`,
    NextBillingDate: `2025-0${2 + (v % 8)}-01T00:00:00.0000000Z`,
    BilledUntil: `2025-0${2 + (v % 8)}-01T00:00:00.0000000Z`,
    Balance: -((c * 13 + v) % 500) / 10,
    PaymentBearer: { Type: 'CreditCard', Holder: `Kunde ${c}`, Last4: String(1000 + (c % 9000)), Expiry: '12/29', Country: 'DE' },
    PaymentProvider: 'Stripe',
    BillingSuspended: false,
    EscalationSuspended: false,
    RecurringPaymentsPaused: false,
    CurrentPhase: { Type: 'Normal', StartDate: '2025-01-15T00:00:00.0000000Z', PlanVariantId: `variant-${(c + v) % 21}` },
    Phases: [
      { Type: 'Trial', StartDate: '2025-01-01T00:00:00.0000000Z', PlanVariantId: `variant-${c % 21}`, InheritStartDate: false },
      { Type: 'Normal', StartDate: '2025-01-15T00:00:00.0000000Z', PlanVariantId: `variant-${(c + v) % 21}`, InheritStartDate: false },
    ],
    CustomFields: custom,
    Version: v,
  };
}

async function fillSource() {
  await pool.query(`DROP TABLE IF EXISTS ${quoteIdent(source)}`);
  await pool.query(`CREATE TABLE ${quoteIdent(source)} (n integer PRIMARY KEY, id text NOT NULL, version integer NOT NULL, body jsonb NOT NULL)`);
  const total = CONTRACTS * VERSIONS;
  for (let from = 0; from < total; from += 5000) {
    const n = [];
    const bodies = [];
    for (let i = from; i < Math.min(total, from + 5000); i++) {
      n.push(i);
      bodies.push(JSON.stringify(contractBody(i % CONTRACTS, Math.floor(i / CONTRACTS) + 1)));
    }
    await pool.query(
      `INSERT INTO ${quoteIdent(source)} SELECT x.n, 'c-' || (x.n % $3), x.n / $3 + 1, x.body::jsonb FROM unnest($1::int[], $2::text[]) AS x(n, body)`,
      [n, bodies, CONTRACTS],
    );
  }
  const { rows } = await pool.query(`SELECT round(avg(length(body::text))) AS text, round(avg(pg_column_size(body))) AS stored FROM ${quoteIdent(source)}`);
  say(`${total} contract versions, bodies ${rows[0].text} bytes as text, ${rows[0].stored} stored (compressed)`);
}

/** Appends every source row to a fresh schema with `variant` applied; the seconds the statements took. */
async function appendAll(variant, run) {
  const schema = `${prefix}_${run}_${variant.key}`;
  const S = quoteIdent(schema);
  await pool.query(`DROP SCHEMA IF EXISTS ${S} CASCADE`);
  await migrate(pool, { schema, log });
  const client = await pool.connect();
  try {
    if (variant.off) await client.query(`ALTER TABLE ${S}.resource_versions DISABLE TRIGGER resource_versions_append_version_facts`);
    await client.query(`VACUUM ANALYZE ${S}.resource_versions`);
    const started = performance.now();
    for (let from = 0; from < CONTRACTS * VERSIONS; from += STATEMENT) {
      await client.query(
        `INSERT INTO ${S}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, kafka_partition, kafka_offset)
         SELECT 'Contract', id, version, timestamptz '2025-01-01' + n * interval '1 second', false, body, md5(n::text), '{}', '{}', 0, n
           FROM ${quoteIdent(source)} WHERE n >= $1 AND n < $2 ORDER BY n`,
        [from, from + STATEMENT],
      );
    }
    return (performance.now() - started) / 1000;
  } finally {
    client.release();
    await pool.query(`DROP SCHEMA IF EXISTS ${S} CASCADE`);
  }
}

const variants = [
  { key: 'shipped', name: 'shipped' },
  { key: 'nofacts', name: 'no facts trigger', off: true },
];
say(`${CONTRACTS} contracts x ${VERSIONS} versions in statements of ${STATEMENT}, ${RUNS} runs; ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`);
try {
  await fillSource();
  const seconds = Object.fromEntries(variants.map((v) => [v.key, []]));
  for (let run = 0; run < RUNS; run++) {
    for (const v of variants) {
      const s = await appendAll(v, run);
      seconds[v.key].push(s);
      say(`run ${run + 1}: ${v.name} ${s.toFixed(2)} s`);
    }
  }
  const med = Object.fromEntries(variants.map((v) => [v.key, median(seconds[v.key].map((s) => s * 1000)) / 1000]));
  for (const v of variants) say(`${v.name}: median ${med[v.key].toFixed(2)} s, ${(med[v.key] / med.shipped).toFixed(2)} x shipped`);
  process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), contracts: CONTRACTS, versions: VERSIONS, statement: STATEMENT, runs: RUNS, seconds, medianSeconds: med }, null, 2)}\n`);
} finally {
  await pool.query(`DROP TABLE IF EXISTS ${quoteIdent(source)}`);
  await pool.end();
}
