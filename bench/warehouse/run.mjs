#!/usr/bin/env node
// Analyst layer benchmark. Not a test: it measures and prints, and asserts nothing about time
// (it stops only when two forms of one answer disagree).
//
//   npm run bench:warehouse -- [--versions N] [--runs R] [--old-runs R] [--sink-records M] [--sink-concurrency P] [--sink-rounds K] [--metrics-only] [--dashboard-only] [--keep] [--reuse <schema>] [--through-triggers] [--generate-only] [--long-ms T] [--timeout-s S] [--help]
//
// 1. generates N versions (default 1,000,000) across the eight types in a fresh warehouse schema,
//    server-side (INSERT ... SELECT): bodies of about 2 KB with the simulator's fields, about
//    five versions per resource (1 to 9), one version in ten with camelCase keys, 2 % of
//    resources deleted, two years and nine months of valid_from; contract phases with their
//    variant and quantity, customers under the ids the contracts name, the catalog's 24 plan
//    variants with their price changes, fx_rates and escalation webhooks (generateCatalogAndReference);
//    then ANALYZE. The derived
//    tables (closed_version_facts, current_facts, contract_state_days) are filled afterwards in one
//    set-based pass per type with the triggers' own expressions, about three times faster than
//    the triggers' per-statement work at this volume; --through-triggers generates through the
//    triggers instead (the two give the same tables);
// 2. times the analyst queries, each the median of --runs runs (default 5), and the same
//    questions on the views as they were before the analyst layer (migration 0002's
//    definitions, in a side schema over the same table), --old-runs runs (default 3; 0 skips);
//    the month-end counts also counted from contract_as_of, checked to give the same rows;
// 3. loads M snapshot records (default 200,000; 0 skips) through the real sink (Kafka, registry,
//    startSink, --sink-concurrency partitions at once, default 3 as shipped) into another fresh warehouse, and the same rows with plain COPY into a table
//    with the same columns and indexes and no trigger, timing only the COPYs; --sink-rounds times
//    (default 3), alternating which goes first, each round a ratio, the median reported;
// 4. times each public metric view whole (every row fetched) and as the dashboard or an analyst
//    reads it, contract_state_on / customer_state_on for yesterday and contract_state_on at 12
//    month-ends, every dashboard request through the data layer the server calls (the SQL of one
//    request, possibly several statements, without HTTP), and the whole first load as the page
//    sends it (the range, the currencies, then seven requests at once); each the median of
//    --runs runs, once when a run takes longer than --long-ms (default 60,000), none when the
//    server cancels it at --timeout-s (default 0: no timeout): metric-timings.mjs.
//    --metrics-only skips 2 and 3; --dashboard-only (with it) times the dashboard's requests and
//    first load alone.
// --generate-only generates, keeps the warehouse, prints its schema and stops: a later run times it
// with --reuse <schema> (a generation of 10,000,000 versions takes hours on a shared machine).
// DATABASE_URL etc. from the environment (the local stack by default); private schemas and
// topics, dropped at the end unless --keep.
import { createHash, randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { configWithLocalStack } from '../../dist/cli/cli-config.js';
import { migrate } from '../../dist/db/migrate.js';
import { createPool, quoteIdent } from '../../dist/db/pool.js';
import { createHealth } from '../../dist/health.js';
import { createKafka, defaultPartitioner } from '../../dist/kafka/client.js';
import { ensureTopics } from '../../dist/kafka/topics.js';
import { pipelineTopicSpecs, topicNames } from '../../dist/wire/topics.js';
import { createLogger } from '../../dist/log.js';
import { createMetrics } from '../../dist/metrics.js';
import { createRegistry } from '../../dist/registry/registry.js';
import { snapshotLine } from '../../dist/sink/batch-writer.js';
import { sinkGroupId, startSink } from '../../dist/sink/sink.js';
import { copyFrom } from '../../dist/warehouse/copy-from.js';
import { refreshMetrics } from '../../dist/warehouse/metric-refresh.js';
import { median, timeMetrics } from './metric-timings.mjs';

const { values: args } = parseArgs({
  options: {
    versions: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '5' },
    'old-runs': { type: 'string', default: '3' },
    'sink-records': { type: 'string', default: '200000' },
    'sink-concurrency': { type: 'string', default: '3' },
    'sink-rounds': { type: 'string', default: '3' },
    keep: { type: 'boolean', default: false },
    'metrics-only': { type: 'boolean', default: false },
    reuse: { type: 'string' },
    'through-triggers': { type: 'boolean', default: false },
    'generate-only': { type: 'boolean', default: false },
    'long-ms': { type: 'string', default: '60000' },
    'timeout-s': { type: 'string', default: '0' },
    'dashboard-only': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  // The usage is this file's opening comment.
  const { readFileSync } = await import('node:fs');
  const head = readFileSync(new URL(import.meta.url), 'utf8').split('\n').slice(1);
  process.stdout.write(`${head.slice(0, head.findIndex((l) => !l.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n')}\n`);
  process.exit(0);
}
if (args['dashboard-only'] && !args['metrics-only']) throw new Error('--dashboard-only times the metric part: add --metrics-only');
const N = Number(args.versions);
const RUNS = Number(args.runs);
const OLD_RUNS = Number(args['old-runs']);
const M = Number(args['sink-records']);
const SINK_ROUNDS = Math.max(1, Number(args['sink-rounds']));
const LONG_MS = Number(args['long-ms']);
const TIMEOUT_S = Number(args['timeout-s']);
if (args['generate-only'] && args.reuse) throw new Error('--generate-only makes a new warehouse: leave out --reuse');
// What --generate-only generates is kept for a later --reuse.
const KEEP = args.keep || args['generate-only'];
const TYPES = ['Contract', 'Customer', 'Order', 'Invoice', 'InvoiceDraft', 'Dunning', 'PaymentTransaction', 'PaymentEscalationProcess'];
const say = (line) => process.stderr.write(`bench: ${new Date().toISOString().slice(11, 19)} ${line}\n`);

const suffix = randomBytes(3).toString('hex');
const config = configWithLocalStack({ ...process.env, TOPIC_PREFIX: `benchwh_${suffix}`, DATABASE_SCHEMA: `benchwh_${suffix}`, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
// --reuse <schema>: the generated warehouse a run with --keep left (no new generation; migrated again;
// kept afterwards).
const schema = args.reuse ?? config.databaseSchema;
const oldSchema = `${config.databaseSchema}_old`;
const sinkSchema = `${config.databaseSchema}_sink`;
const copySchema = `${config.databaseSchema}_copy`;
const noFactsSchema = `${config.databaseSchema}_nofacts`;
const S = quoteIdent(schema);
const O = quoteIdent(oldSchema);
const log = createLogger(config.logLevel);
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'bench-warehouse', log, max: 4 });

// Resources: on average five versions each (1 + (r*7) % 9 is 1..9, uniformly over r).
const R = Math.max(8, Math.round(N / 5));
const START = '2025-01-01T00:00:00Z';

/**
 * The body of version v of resource r (SQL over type, r, v, nv, cust, created, at): the
 * documented fields of the service as the sandbox serves them, ~2 KB: a trial is a Trial phase,
 * a cancellation an EndDate with an Inactive phase from it, a payment transaction's Status an
 * object with its StatusTimestamp. The fields that vary are built per version; the rest come from one of 64
 * templates (bodies built field by field cost most of the generation time). One version in ten
 * spells its keys in camelCase, as the service may (spec 9.3).
 */
const VARYING = [
  ['Id', 'id'],
  ['CustomerId', 'cust'],
  ['ContractId', `'r-' || (r - r % 8)`],
  ['PlanId', `'plan-' || ((r + v / 3) % 12)`],
  ['PlanVariantId', `'variant-' || ((r + v / 3) % 12) || '-' || (r % 2)`],
  ['LifecycleStatus', `CASE WHEN v = 1 AND r % 3 = 0 THEN 'InTrial' ELSE 'Active' END`],
  ['Status', `CASE WHEN type = 'PaymentTransaction'
                   THEN jsonb_build_object('Status', (ARRAY['Succeeded', 'Failed', 'Pending'])[1 + (r + v) % 3], 'Timestamp', at)
                   ELSE to_jsonb((ARRAY['InProgress', 'Completed', 'PaymentPending', 'Failed'])[1 + (r + v) % 4]) END`],
  ['StatusTimestamp', 'at'],
  ['StartDate', 'created'],
  // Each paying phase names its variant and quantity (the MRR views price them); one contract in
  // five changes variant and quantity two months in, from its third version on.
  ['Phases', `CASE WHEN r % 3 = 0
                   THEN jsonb_build_array(jsonb_build_object('Type', 'Trial', 'StartDate', created, 'PlanId', 'plan-' || (r % 12),
                                                             'PlanVariantId', 'variant-' || (r % 12) || '-' || (r % 2), 'Quantity', 1 + r % 3),
                                          jsonb_build_object('Type', 'Normal', 'StartDate', created + interval '14 days', 'PlanId', 'plan-' || ((r + v / 3) % 12),
                                                             'PlanVariantId', 'variant-' || ((r + v / 3) % 12) || '-' || (r % 2), 'Quantity', 1 + r % 3))
                   ELSE jsonb_build_array(jsonb_build_object('Type', 'Normal', 'StartDate', created, 'PlanId', 'plan-' || ((r + v / 3) % 12),
                                                             'PlanVariantId', 'variant-' || ((r + v / 3) % 12) || '-' || (r % 2), 'Quantity', 1 + r % 3)) END
              || CASE WHEN r % 5 = 1 AND v >= 3
                      THEN jsonb_build_array(jsonb_build_object('Type', 'Normal', 'StartDate', created + interval '60 days', 'PlanId', 'plan-' || ((r + v / 3 + 1) % 12),
                                                                'PlanVariantId', 'variant-' || ((r + v / 3 + 1) % 12) || '-' || (r % 2), 'Quantity', 1 + (r + 1) % 3))
                      ELSE '[]'::jsonb END
              || CASE WHEN v = nv AND r % 32 = 0 THEN jsonb_build_array(jsonb_build_object('Type', 'Inactive', 'StartDate', at + interval '30 days')) ELSE '[]'::jsonb END`],
  ['CurrentPhase', `jsonb_build_object('Type', CASE WHEN v = 1 AND r % 3 = 0 THEN 'Trial' ELSE 'Normal' END, 'StartDate', created)`],
  ['DocumentDate', `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`],
  ['DueDate', `to_char((at + interval '14 days') AT TIME ZONE 'UTC', 'YYYY-MM-DD')`],
  ['TotalNet', `round((r % 1000)::numeric / 7, 2)`],
  ['Total', `round((r % 1000)::numeric / 7, 2)`],
  ['Amount', `round((r % 500)::numeric / 3, 2)`],
  ['IsLocked', 'v % 7 = 0'],
  ['DunningLevel', '1 + v % 3'],
  ['TriggerDays', 'v * 7'],
  ['Balance', '-(v * 10)'],
  // Business dates the metric views read.
  ['EndDate', `CASE WHEN v = nv AND r % 32 = 0 THEN at + interval '30 days' END`],
  ['CreatedAt', 'created'],
  ['Created', 'created'],
];
const camel = (k) => k.charAt(0).toLowerCase() + k.slice(1);
const varying = (name) => `jsonb_build_object(${VARYING.map(([k, e]) => `'${name(k)}', ${e}`).join(', ')})`;
/** A customer's own fields, which the customer search and customer_overview read (ExternalCustomerId replaces the template's). */
const CUSTOMER = [
  ['CompanyName', `CASE WHEN r % 3 = 0 THEN 'Firma ' || (r / 8) || ' GmbH' END`],
  ['FirstName', `(ARRAY['Anna', 'Ben', 'Clara', 'David', 'Eva', 'Felix', 'Greta', 'Hugo'])[1 + (r / 8) % 8]`],
  ['LastName', `'Kunde' || (r / 8)`],
  ['EmailAddress', `'kunde' || (r / 8) || '@example.com'`],
  ['ExternalCustomerId', `'CRM-' || (100000 + r / 8)`],
];
const customer = (name) => `CASE WHEN type = 'Customer' THEN jsonb_build_object(${CUSTOMER.map(([k, e]) => `'${name(k)}', ${e}`).join(', ')}) ELSE '{}'::jsonb END`;
const BODY_SQL = `(CASE WHEN (r + v) % 10 = 0 THEN tpl.camel || ${varying(camel)} || ${customer(camel)} ELSE tpl.pascal || ${varying((k) => k)} || ${customer((k) => k)} END)`;
/**
 * A resource's id: a customer's is 'cust-<r / 8>', the ids the contracts' CustomerId name (their
 * 'cust-' ids are below R / 16 + 1, the customers' run to R / 8), so every contract's customer
 * is a loaded Customer; every other resource's 'r-<r>'.
 */
const ID_SQL = `CASE WHEN type = 'Customer' THEN 'cust-' || (r / 8) ELSE 'r-' || r END`;

/** 64 templates of the fields that do not vary, in both spellings. */
async function createTemplates(target) {
  await pool.query(`CREATE TABLE ${target}.bench_templates AS
    SELECT i, b AS pascal, (SELECT jsonb_object_agg(lower(left(k, 1)) || substr(k, 2), val) FROM jsonb_each(b) AS e(k, val)) AS camel
      FROM (SELECT i, jsonb_build_object(
              'ExternalCustomerId', 'CRM-' || (10000 + i * 977),
              'Currency', (ARRAY['EUR', 'CHF', 'USD'])[1 + i % 3],
              'InvoiceNumber', 'INV-' || i,
              'TotalVat', round(i::numeric / 7 * 0.19, 2),
              'TotalGross', round(i::numeric / 7 * 1.19, 2),
              'PaymentProvider', CASE WHEN i % 2 = 0 THEN 'Stripe' ELSE 'GoCardless' END,
              'Phases', jsonb_build_array(jsonb_build_object('Type', 'Normal', 'StartDate', '2025-01-01T00:00:00Z', 'PlanId', 'plan-' || (i % 12), 'PlanVariantId', 'variant-' || (i % 12) || '-0')),
              'PaymentBearer', jsonb_build_object('Type', 'CreditCard', 'Holder', 'Jane Q. Customer', 'CardType', 'Visa', 'Last4', (1000 + i * 37)::text, 'ExpiryMonth', 12, 'ExpiryYear', 2030),
              'Address', jsonb_build_object('Street', 'Musterstraße', 'HouseNumber', i::text, 'PostalCode', '80331', 'City', 'München', 'Country', 'DE'),
              'ComponentSubscriptions', (SELECT jsonb_agg(jsonb_build_object('Id', md5(i::text || k), 'ComponentId', 'comp-' || k, 'Quantity', k + i, 'StartDate', '2025-01-01T00:00:00Z')) FROM generate_series(1, 4) k),
              'Notes', (SELECT string_agg(md5(i::text || k), ' ') FROM generate_series(1, 28) k)) AS b
              FROM generate_series(0, 63) AS i) t`);
}

const TRIGGERS = ['resource_versions_append_version_facts'];

/** The derived tables of a history written with their trigger off: migrations 0005's, 0010's, 0012's and 0025's fills, with the trigger's field extraction. */
async function fillDerivedTables() {
  for (const type of [...TYPES, 'PlanVariant']) {
    await pool.query(
      `WITH f AS (
         SELECT a.resource_type, a.resource_id, a.version, a.fetched_at AS valid_from,
                lead(a.fetched_at) OVER (PARTITION BY a.resource_type, a.resource_id ORDER BY a.version) AS valid_to,
                a.deleted, x.fields
           FROM ${S}.resource_versions a
           LEFT JOIN ${S}.version_facts_keys k ON k.resource_type = a.resource_type
           LEFT JOIN LATERAL (SELECT jsonb_object_agg(lower(e.key), e.value ORDER BY e.key DESC) AS fields
                                FROM jsonb_each(CASE WHEN k.keys IS NOT NULL AND jsonb_typeof(a.body) = 'object' THEN a.body END) AS e
                               WHERE lower(e.key) = ANY (k.keys)) x ON true
          WHERE a.resource_type = $1),
       closed AS (INSERT INTO ${S}.closed_version_facts SELECT * FROM f WHERE valid_to IS NOT NULL)
       INSERT INTO ${S}.current_facts (resource_type, resource_id, version, valid_from, deleted, fields)
       SELECT resource_type, resource_id, version, valid_from, deleted, fields FROM f WHERE valid_to IS NULL`,
      [type],
    );
    say(`filled closed_version_facts and current_facts of ${type}`);
  }
  await pool.query(`INSERT INTO ${S}.contract_state_days (day, status, plan_id, delta) SELECT * FROM ${S}.contract_state_days_from_facts()`);
  say('filled contract_state_days');
}

/** The plan variants the contracts' phases name: 'variant-<plan>-<0|1>', the second of a plan billed yearly at ten months' fee. */
const VARIANT_BODY = `jsonb_build_object('Id', 'variant-' || p || '-' || k, 'PlanId', 'plan-' || p,
  'InternalName', 'Plan ' || p || CASE WHEN k = 0 THEN ' monthly' ELSE ' yearly' END,
  'RecurringFee', round((9 + p * 5) * CASE WHEN k = 0 THEN 1 ELSE 10 END * (1 + 0.08 * (v - 1))::numeric, 2), 'SetupFee', 0,
  'FeePeriod', jsonb_build_object('Unit', CASE WHEN k = 0 THEN 'Month' ELSE 'Year' END, 'Quantity', 1),
  'BillingPeriod', jsonb_build_object('Unit', CASE WHEN k = 0 THEN 'Month' ELSE 'Year' END, 'Quantity', 1))`;

/**
 * What the MRR views and the escalation episodes read besides the eight types: the catalog (24
 * plan variants, 1 to 3 versions each, a price raised by 8 % every 200 days: the first version
 * read at the start, so in force for all time before), exchange rates into EUR (fx_rates, two
 * per currency), and escalation webhooks (webhook_events): for one contract in five a
 * PaymentEscalated per step (1 to 3, TriggerDays 7, 14, 21 after a DueDate a month after the
 * contract's start), then a PaymentEscalationReset 40 days after the DueDate; one in ten of
 * those contracts escalates again 180 days later, and one in fifteen leaves its last episode open.
 * The dunning that names such a contract is first read 10 days after its first DueDate (generate()),
 * so dunning_episodes places it in that episode; every other dunning is one of its own.
 */
async function generateCatalogAndReference() {
  await pool.query(
    `INSERT INTO ${S}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset)
     SELECT 'PlanVariant', 'variant-' || p || '-' || k, v, $1::timestamptz + (v - 1) * interval '200 days', false, b.body, md5(b.body::text), '{}', '{}', NULL, 0, v
       FROM generate_series(0, 11) AS p CROSS JOIN generate_series(0, 1) AS k
       CROSS JOIN LATERAL generate_series(1, 1 + (p * 2 + k) % 3) AS v
       CROSS JOIN LATERAL (SELECT ${VARIANT_BODY} AS body) b`,
    [START],
  );
  await pool.query(`INSERT INTO ${S}.fx_rates (currency, valid_from, rate_to_reporting)
    VALUES ('EUR', '2024-01-01', 1), ('EUR', '2026-01-01', 1), ('CHF', '2024-01-01', 1.04), ('CHF', '2026-01-01', 1.07), ('USD', '2024-01-01', 0.93), ('USD', '2026-01-01', 0.86)`);
  await pool.query(
    `INSERT INTO ${S}.webhook_events (event_id, event, received_at, payload)
     SELECT gen_random_uuid(), x.event, x.received_at, x.payload
       FROM generate_series(0, $2::int - 1, 8) AS r
       CROSS JOIN LATERAL (SELECT 'r-' || r AS contract_id, 'cust-' || ((r::bigint * 7919) % ($2::int / 16 + 1)) AS cust,
                                  $1::timestamptz + (r::float8 / $2::int) * interval '730 days' + interval '31 days' AS first_due) c
       CROSS JOIN LATERAL generate_series(0, CASE WHEN (r / 8) % 10 = 0 THEN 1 ELSE 0 END) AS e
       CROSS JOIN LATERAL (SELECT c.first_due + e * interval '180 days' AS due, e = CASE WHEN (r / 8) % 10 = 0 THEN 1 ELSE 0 END AS last) ep
       CROSS JOIN LATERAL (
         SELECT 'PaymentEscalated' AS event, ep.due + (7 * s) * interval '1 day' + (r % 3600) * interval '1 second' AS received_at,
                jsonb_build_object('ContractId', c.contract_id, 'CustomerId', c.cust, 'TriggerDays', 7 * s, 'DueDate', ep.due, 'PaymentProvider', 'Stripe') AS payload
           FROM generate_series(1, 1 + (r / 8) % 3) AS s
         UNION ALL
         SELECT 'PaymentEscalationReset', ep.due + interval '40 days' + (r % 3600) * interval '1 second', jsonb_build_object('ContractId', c.contract_id, 'CustomerId', c.cust)
          WHERE NOT (ep.last AND (r / 8) % 15 = 0)) x
      WHERE (r / 8) % 5 = 0`,
    [START, R],
  );
  await pool.query(`ANALYZE ${S}.webhook_events`);
  say('generated the catalog, fx_rates and escalation webhooks');
}

async function generate() {
  await migrate(pool, { schema, log });
  await createTemplates(S);
  const chunk = 20_000;
  const started = performance.now();
  const throughTriggers = args['through-triggers'];
  if (!throughTriggers) await pool.query(`ALTER TABLE ${S}.resource_versions ${TRIGGERS.map((t) => `DISABLE TRIGGER ${t}`).join(', ')}`);
  for (let a = 0; a < R; a += chunk) {
    const b = Math.min(R, a + chunk);
    await pool.query(
      `INSERT INTO ${S}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset)
       SELECT type, ids.id, v, at, del, CASE WHEN del THEN NULL ELSE body END, md5(coalesce(body::text, 'deleted')), '{}', '{}',
              CASE WHEN type = 'Contract' THEN cust END, 0, r::bigint * 10 + v
         FROM generate_series($1::int, $2::int - 1) AS r
         CROSS JOIN LATERAL (SELECT ($3::text[])[1 + r % 8] AS type, 1 + (r * 7) % 9 AS nv,
                                    'cust-' || ((r::bigint * 7919) % ($4::int / 16 + 1)) AS cust,
                                    $5::timestamptz + (r::float8 / $4::int) * interval '730 days'
                                      -- The dunning of a contract that escalates (generateCatalogAndReference) is
                                      -- issued 10 days after the escalation's first DueDate: during its first episode.
                                      + CASE WHEN r % 8 = 5 AND (r / 8) % 5 = 0 THEN interval '41 days' ELSE interval '0' END AS created) t
         CROSS JOIN LATERAL (SELECT ${ID_SQL} AS id) ids
         CROSS JOIN LATERAL generate_series(1, t.nv) AS v
         CROSS JOIN LATERAL (SELECT created + (v - 1) * interval '29 days' + ((r * 13 + v * 7) % 86400) * interval '1 second' AS at,
                                    (r % 50 = 0 AND v = nv AND v > 1) AS del) d
         JOIN ${S}.bench_templates tpl ON tpl.i = (r * 31 + v) % 64
         CROSS JOIN LATERAL (SELECT ${BODY_SQL} AS body) bd`,
      [a, b, TYPES, R, START],
    );
    if ((a / chunk) % 10 === 0) say(`generated resources ${b}/${R}`);
  }
  await generateCatalogAndReference();
  if (!throughTriggers) {
    await fillDerivedTables();
    await pool.query(`ALTER TABLE ${S}.resource_versions ${TRIGGERS.map((t) => `ENABLE TRIGGER ${t}`).join(', ')}`);
  }
  // Statistics before the refresh, as a sink's refresh finds them (autovacuum analyzes a table
  // growing by appends): planned on tables never analyzed, the refresh once spent over eight
  // minutes on the dunnings' kept rows at 1,000,000 versions (28 s in all once analyzed).
  for (const table of ['closed_version_facts', 'current_facts', 'webhook_events']) await pool.query(`ANALYZE ${S}.${table}`);
  await refreshKept();
  const ms = performance.now() - started;
  await pool.query(`VACUUM ANALYZE ${S}.resource_versions`);
  await pool.query(`VACUUM ANALYZE ${S}.closed_version_facts`);
  await pool.query(`VACUUM ANALYZE ${S}.current_facts`);
  const { rows } = await pool.query(
    `SELECT count(*)::bigint AS versions, avg(octet_length(body::text))::int AS body_bytes, pg_size_pretty(pg_total_relation_size('${schema}.resource_versions')) AS size FROM ${S}.resource_versions`,
  );
  return { ms, ...rows[0] };
}

/**
 * The metric rows kept at write time for the contracts the generation listed (its statements
 * fire the listing trigger; the derived tables were filled without the append trigger): one
 * refresh, timed, as the sink would run it.
 */
async function refreshKept() {
  const t = performance.now();
  const result = await refreshMetrics(pool, schema);
  if (result && result.refreshed > 0) say(`refreshed the kept metric rows of ${result.refreshed} contracts in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

async function reuse() {
  const t = performance.now();
  const migrated = await migrate(pool, { schema, log });
  if (migrated.derivedObjects === 'recreated') say(`migrated (views re-created, kept metric rows filled) in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  await refreshKept();
  const { rows } = await pool.query(
    `SELECT count(*)::bigint AS versions, avg(octet_length(body::text))::int AS body_bytes, pg_size_pretty(pg_total_relation_size('${schema}.resource_versions')) AS size FROM ${S}.resource_versions`,
  );
  return { ms: 0, ...rows[0] };
}

/** Migration 0002's views (window and DISTINCT ON over the whole type), over the same table. */
async function createOldViews() {
  await pool.query(`CREATE SCHEMA ${O}`);
  await pool.query(`CREATE VIEW ${O}.contract_history AS
    SELECT resource_id, version, fetched_at AS valid_from, lead(fetched_at) OVER w AS valid_to, lead(version) OVER w IS NULL AS is_current,
           deleted, body, content_hash, source_event_ids[1] AS source_event_id, source_events[1] AS source_event, customer_id
      FROM ${S}.resource_versions WHERE resource_type = 'Contract' WINDOW w AS (PARTITION BY resource_id ORDER BY version)`);
  await pool.query(`CREATE VIEW ${O}.contract_current AS
    SELECT * FROM (SELECT DISTINCT ON (resource_id) resource_id, version, fetched_at AS valid_from, NULL::timestamptz AS valid_to, true AS is_current,
                          deleted, body, content_hash, source_event_ids[1] AS source_event_id, source_events[1] AS source_event, customer_id
                     FROM ${S}.resource_versions WHERE resource_type = 'Contract' ORDER BY resource_id, version DESC) latest
     WHERE NOT deleted`);
}

const MONTH = ['2026-03-01', '2026-04-01'];
const MONTH_ENDS = `generate_series('2025-12-31'::timestamptz, '2025-12-31'::timestamptz + interval '11 months', interval '1 month')`;
const AS_OF = '2026-06-30T12:00:00Z';

// The analyst layer as it was before version_facts: typed columns read from the bodies (wh_field's
// any-case lookup), current state through resource_heads, as of a date a walk back from each head.
const field = (r, key) => `${S}.wh_as_text(${S}.wh_field(${r}.body, '${key}', '${key.charAt(0).toLowerCase()}${key.slice(1)}', '${key.toLowerCase()}'))`;
const HEAD_BODIES = `${S}.resource_heads h JOIN ${S}.resource_versions r ON r.resource_type = h.resource_type AND r.resource_id = h.resource_id AND r.version = h.version
  WHERE h.resource_type = 'Contract' AND NOT h.deleted`;
const walkBack = (h, at) => `(SELECT x.deleted, x.body FROM ${S}.resource_versions x WHERE x.resource_type = 'Contract' AND x.resource_id = ${h}.resource_id AND x.fetched_at <= ${at}
  ORDER BY x.version DESC LIMIT 1)`;

function queries(one, customer) {
  return [
    {
      name: 'history of one resource',
      now: [`SELECT * FROM ${S}.contract_history WHERE resource_id = $1 ORDER BY version`, [one]],
      old: [`SELECT * FROM ${O}.contract_history WHERE resource_id = $1 ORDER BY version`, [one]],
    },
    {
      name: 'current contracts by status',
      now: [`SELECT status, count(*) FROM ${S}.contract_current GROUP BY 1 ORDER BY 1`, []],
      old: [`SELECT body->>'LifecycleStatus' AS status, count(*) FROM ${O}.contract_current GROUP BY 1 ORDER BY 1`, []],
      bodies: [`SELECT ${field('r', 'LifecycleStatus')} AS status, count(*) FROM ${HEAD_BODIES} GROUP BY 1 ORDER BY 1`, []],
    },
    {
      name: 'current contracts of one customer',
      now: [`SELECT * FROM ${S}.contract_current WHERE customer_id = $1`, [customer]],
      old: [`SELECT * FROM ${O}.contract_current WHERE customer_id = $1`, [customer]],
    },
    {
      name: 'count of all contracts as of a date',
      now: [`SELECT count(*) FROM ${S}.contract_as_of($1)`, [AS_OF]],
      old: [`SELECT count(*) FROM ${O}.contract_history WHERE valid_from <= $1 AND (valid_to > $1 OR valid_to IS NULL) AND NOT deleted`, [AS_OF]],
      bodies: [`SELECT count(*) FROM ${S}.resource_heads h CROSS JOIN LATERAL ${walkBack('h', '$1::timestamptz')} s WHERE h.resource_type = 'Contract' AND NOT s.deleted`, [AS_OF]],
    },
    {
      name: 'active contracts by plan at 12 month-ends',
      now: [`SELECT m, c.plan_id, c.contracts FROM ${MONTH_ENDS} AS m CROSS JOIN LATERAL ${S}.contract_counts_as_of(m) c WHERE c.status = 'Active'`, []],
      // The same answer counted from the versions valid at each moment; the run checks they agree.
      asOf: [`SELECT m, a.plan_id, count(*) FROM ${MONTH_ENDS} AS m CROSS JOIN LATERAL ${S}.contract_as_of(m) a WHERE a.status = 'Active' GROUP BY 1, 2`, []],
      old: [
        `SELECT m, h.body->>'PlanId', count(*) FROM ${MONTH_ENDS} AS m JOIN ${O}.contract_history h ON h.valid_from <= m AND (h.valid_to > m OR h.valid_to IS NULL)
          WHERE NOT h.deleted AND h.body->>'LifecycleStatus' = 'Active' GROUP BY 1, 2`,
        [],
      ],
      bodies: [
        `SELECT m, ${field('s', 'PlanId')}, count(*) FROM ${MONTH_ENDS} AS m CROSS JOIN ${S}.resource_heads h CROSS JOIN LATERAL ${walkBack('h', 'm')} s
          WHERE h.resource_type = 'Contract' AND NOT s.deleted AND ${field('s', 'LifecycleStatus')} = 'Active' GROUP BY 1, 2`,
        [],
      ],
    },
    {
      name: 'plan changes in one month',
      now: [`SELECT resource_id, old_value, new_value FROM ${S}.contract_changes WHERE field = 'planid' AND valid_from >= $1 AND valid_from < $2`, MONTH],
      old: [
        `SELECT resource_id, p, pp FROM (SELECT resource_id, valid_from, body->>'PlanId' AS p, lag(body->>'PlanId') OVER (PARTITION BY resource_id ORDER BY version) AS pp FROM ${O}.contract_history) x
          WHERE valid_from >= $1 AND valid_from < $2 AND pp IS NOT NULL AND p IS DISTINCT FROM pp`,
        MONTH,
      ],
    },
  ];
}

async function time([sql, params], runs) {
  const times = [];
  let rows = 0;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const result = await pool.query(sql, params);
    times.push(performance.now() - t);
    rows = result.rowCount ?? result.rows.length;
  }
  return { ms: median(times), rows };
}

async function loadThroughSinkAndCopy() {
  const kafka = createKafka({ brokers: config.kafkaBrokers, clientId: 'bench-warehouse', log });
  const registry = createRegistry(config.schemaRegistryUrl);
  const names = topicNames(config.topicPrefix);
  const sinkConfig = { ...config, databaseSchema: sinkSchema };
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, Object.values(pipelineTopicSpecs(names)));
  await admin.disconnect();
  try {
    return await sinkAgainstCopy(kafka, registry, names, sinkConfig);
  } finally {
    if (!args.keep) {
      const a = kafka.admin();
      await a.connect();
      await a.deleteTopics({ topics: Object.values(names) }).catch(() => undefined);
      const roundGroups = Array.from({ length: SINK_ROUNDS - 1 }, (_, i) => `${config.topicPrefix}.sink-${i + 1}`);
      await a.deleteGroups([sinkGroupId(sinkConfig), `${config.topicPrefix}.sink-nofacts`, ...roundGroups]).catch(() => undefined);
      await a.disconnect();
    }
  }
}

async function sinkAgainstCopy(kafka, registry, names, sinkConfig) {
  // The same ~2 KB bodies, built in the database once, four versions per resource.
  const resources = Math.ceil(M / 4);
  const { rows: bodies } = await pool.query(
    `SELECT r, ${BODY_SQL}::text AS body FROM generate_series(0, 63) AS r JOIN ${S}.bench_templates tpl ON tpl.i = r,
            LATERAL (SELECT 'Contract' AS type, 's-' || r AS id, 1 AS v, 4 AS nv, 'cust-1' AS cust, now() AS created, now() AS at) x`,
  );
  const record = (i) => {
    const r = i % resources;
    const version = Math.floor(i / resources) + 1;
    const base = bodies[(r + version) % bodies.length].body;
    const body = `{"Version":${version},"Seq":${r},${base.slice(1)}`;
    return {
      resource_type: TYPES[r % 8],
      resource_id: `s-${r}`,
      version,
      fetched_at: Date.UTC(2025, 0, 1) + i,
      deleted: false,
      content_hash: createHash('sha256').update(body).digest('hex'),
      body,
      source_event_ids: [],
      source_events: [],
      sources: [],
    };
  };
  const schemaId = await registry.registerFile(`${names.snapshots}-value`, 'resource-snapshot.avsc');
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: defaultPartitioner });
  await producer.connect();
  for (let i = 0; i < M; i += 300) {
    const messages = [];
    for (let j = i; j < Math.min(M, i + 300); j++) {
      const r = record(j);
      messages.push({ key: `${r.resource_type}:${r.resource_id}`, value: await registry.encode(schemaId, r) });
    }
    await producer.send({ topic: names.snapshots, acks: -1, messages });
  }
  await producer.disconnect();
  say(`produced ${M} snapshot records`);

  const runSink = async (target, withFacts) => {
    await migrate(pool, { schema: target.databaseSchema, log });
    // The same sink into a warehouse whose version_facts trigger is off: what the facts cost.
    if (!withFacts) await pool.query(`ALTER TABLE ${quoteIdent(target.databaseSchema)}.resource_versions DISABLE TRIGGER resource_versions_append_version_facts`);
    const metrics = createMetrics();
    const written = async () => (await metrics.getSingleMetric('billing_loader_sink_rows_written_total')?.get())?.values.reduce((s, v) => s + v.value, 0) ?? 0;
    const started = performance.now();
    const sink = await startSink({ log, metrics, health: createHealth() }, target, { partitionsConsumedConcurrently: Number(args['sink-concurrency']) });
    let firstAt;
    for (;;) {
      const n = await written();
      if (n > 0 && firstAt === undefined) firstAt = performance.now();
      if (n >= M) break;
      await sleep(100);
    }
    const done = performance.now();
    await sink.stop();
    say(`sink wrote ${M} rows into ${target.databaseSchema}${withFacts ? '' : ' (version_facts trigger off)'}`);
    return { ms: done - started, steadyMs: done - firstAt };
  };

  // Plain COPY: same columns and indexes; no trigger (neither the heads nor the append-only fence)
  // and no generated `fields`: the table as it was before the analyst layer. A fresh table each time.
  const runCopy = async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(copySchema)} CASCADE`);
    await pool.query(`CREATE SCHEMA ${quoteIdent(copySchema)}`);
    await pool.query(`CREATE TABLE ${quoteIdent(copySchema)}.resource_versions (LIKE ${quoteIdent(sinkSchema)}.resource_versions INCLUDING ALL EXCLUDING GENERATED)`);
    const client = await pool.connect();
    let copyMs = 0;
    try {
      for (let i = 0; i < M; i += 10_000) {
        let text = '';
        for (let j = i; j < Math.min(M, i + 10_000); j++) {
          const r = record(j);
          text += snapshotLine({
            resourceType: r.resource_type, resourceId: r.resource_id, version: r.version, fetchedAtMs: r.fetched_at, deleted: false, body: r.body, contentHash: r.content_hash,
            sourceEventIds: [], sourceEvents: [], customerId: null, coordinates: { topic: names.snapshots, partition: j % 6, offset: String(j) },
          });
        }
        const t = performance.now();
        await copyFrom(client, `COPY ${quoteIdent(copySchema)}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset) FROM STDIN`, text);
        copyMs += performance.now() - t;
      }
    } finally {
      client.release();
    }
    say(`plain COPY of ${M} rows`);
    return copyMs;
  };

  // --sink-rounds rounds, each the sink into a fresh warehouse (its own consumer group) next to
  // plain COPY into a fresh table, in alternating order (sink first in the first round), so that
  // each ratio compares two loads a minute apart on this shared machine; the median is reported.
  // The sink without the facts trigger loads once, after the first round.
  const rounds = [];
  let noFacts;
  for (let round = 0; round < SINK_ROUNDS; round++) {
    const target = round === 0 ? sinkConfig : { ...sinkConfig, databaseSchema: `${sinkSchema}_${round}`, sinkGroupId: `${config.topicPrefix}.sink-${round}` };
    const sinkFirst = round % 2 === 0;
    const copyBefore = sinkFirst ? undefined : await runCopy();
    const sink = await runSink(target, true);
    const copyMs = sinkFirst ? await runCopy() : copyBefore;
    if (round > 0) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(target.databaseSchema)} CASCADE`);
    const ratio = +(copyMs / sink.ms).toFixed(2);
    rounds.push({ sinkRowsPerSecond: Math.round(M / (sink.ms / 1000)), copyRowsPerSecond: Math.round(M / (copyMs / 1000)), ratio, steadyRatio: +(copyMs / sink.steadyMs).toFixed(2) });
    say(`round ${round + 1}: sink ${rounds[round].sinkRowsPerSecond} rows/s, plain COPY ${rounds[round].copyRowsPerSecond} rows/s, ratio ${ratio}`);
    if (round === 0) noFacts = { ...(await runSink({ ...sinkConfig, databaseSchema: noFactsSchema, sinkGroupId: `${config.topicPrefix}.sink-nofacts` }, false)), copyMs };
  }
  const heads = await pool.query(`SELECT count(*)::int AS n FROM ${quoteIdent(sinkSchema)}.resource_heads`);
  // The middle value (the mean of the two middle ones for an even count), to two decimals.
  const mid = (values) => {
    const v = [...values].sort((x, y) => x - y);
    const h = Math.floor(v.length / 2);
    return +(v.length % 2 ? v[h] : (v[h - 1] + v[h]) / 2).toFixed(2);
  };
  return {
    records: M,
    heads: heads.rows[0].n,
    rounds,
    sinkRowsPerSecond: Math.round(mid(rounds.map((r) => r.sinkRowsPerSecond))),
    copyRowsPerSecond: Math.round(mid(rounds.map((r) => r.copyRowsPerSecond))),
    ratio: mid(rounds.map((r) => r.ratio)),
    steadyRatio: mid(rounds.map((r) => r.steadyRatio)),
    // Against the first round's COPY, which ran next to it.
    withoutFactsRowsPerSecond: Math.round(M / (noFacts.ms / 1000)),
    withoutFactsRatio: +(noFacts.copyMs / noFacts.ms).toFixed(2),
  };
}

try {
  say(`${args.reuse ? 'reusing the generated warehouse' : `${N} versions over ${R} resources`}; schema ${schema}; ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`);
  const generated = args.reuse ? await reuse() : await generate();
  say(`generated ${generated.versions} versions in ${(generated.ms / 1000).toFixed(0)} s, body ${generated.body_bytes} bytes, table ${generated.size}`);
  if (args['generate-only']) {
    console.log(JSON.stringify({ date: new Date().toISOString(), schema, versions: Number(generated.versions), resources: R, bodyBytes: generated.body_bytes, tableSize: generated.size, generateSeconds: Math.round(generated.ms / 1000) }, null, 2));
    say(`kept schema ${schema} (${Math.round(performance.now() / 1000)} s since start, VACUUM ANALYZE included): time it with --reuse ${schema}`);
    await pool.end();
    process.exit(0);
  }
  if (!args['metrics-only']) await createOldViews();
  const { rows: picks } = await pool.query(
    `SELECT (SELECT resource_id FROM ${S}.resource_heads WHERE resource_type = 'Contract' AND version = 5 LIMIT 1) AS one,
            (SELECT customer_id FROM ${S}.resource_versions WHERE resource_type = 'Contract' AND customer_id IS NOT NULL LIMIT 1) AS customer`,
  );
  const results = [];
  for (const q of args['metrics-only'] ? [] : queries(picks[0].one, picks[0].customer)) {
    const now = await time(q.now, RUNS);
    const old = OLD_RUNS > 0 ? await time(q.old, OLD_RUNS) : undefined;
    const bodies = OLD_RUNS > 0 && q.bodies ? await time(q.bodies, OLD_RUNS) : undefined;
    const asOf = q.asOf ? await time(q.asOf, RUNS) : undefined;
    if (q.asOf) {
      const { rows: differ } = await pool.query(`SELECT count(*)::int AS n FROM ((${q.now[0]} EXCEPT ${q.asOf[0]}) UNION ALL (${q.asOf[0]} EXCEPT ${q.now[0]})) d`);
      if (differ[0].n !== 0) throw new Error(`${q.name}: the counts and contract_as_of differ in ${differ[0].n} rows`);
    }
    results.push({ query: q.name, ms: now.ms, rows: now.rows, oldMs: old?.ms, oldRows: old?.rows, speedup: old ? +(old.ms / now.ms).toFixed(1) : undefined, fromBodiesMs: bodies?.ms, fromBodiesRows: bodies?.rows, fromAsOfMs: asOf?.ms });
    say(`${q.name}: ${now.ms} ms (${now.rows} rows)${asOf ? `; from contract_as_of ${asOf.ms} ms (same rows)` : ''}${old ? `; before the analyst layer ${old.ms} ms (${old.rows} rows)` : ''}${bodies ? `; typed columns from the bodies ${bodies.ms} ms (${bodies.rows} rows)` : ''}`);
  }
  const metrics = await timeMetrics({ pool, databaseUrl: config.databaseUrl, schema, runs: RUNS, longMs: LONG_MS, timeoutS: TIMEOUT_S, dashboardOnly: args['dashboard-only'], log, say });
  const sink = M > 0 && !args['metrics-only'] ? await loadThroughSinkAndCopy() : undefined;
  if (sink) say(`median of ${sink.rounds.length} rounds: sink ${sink.sinkRowsPerSecond} rows/s, plain COPY ${sink.copyRowsPerSecond} rows/s, ratio ${sink.ratio} (steady ${sink.steadyRatio}; rounds ${sink.rounds.map((r) => r.ratio).join(', ')}); without the version_facts trigger ${sink.withoutFactsRowsPerSecond} rows/s, ratio ${sink.withoutFactsRatio}`);
  console.log(JSON.stringify({ date: new Date().toISOString(), versions: Number(generated.versions), resources: R, bodyBytes: generated.body_bytes, tableSize: generated.size, generateSeconds: Math.round(generated.ms / 1000), queries: results, metrics, sink }, null, 2));
} finally {
  // A reused warehouse is the caller's: it stays, as it was left by the run that kept it.
  const made = args.reuse ? [oldSchema, sinkSchema, copySchema, noFactsSchema] : [schema, oldSchema, sinkSchema, copySchema, noFactsSchema];
  if (!KEEP) for (const s of made) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(s)} CASCADE`);
  await pool.end();
}
