import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_TYPES } from '../../src/billing-api/resource-types.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, quoteIdent } from '../../src/db/pool.js';
import { createLogger } from '../../src/log.js';
import { asOfFunction, changesView } from '../../src/warehouse/analyst-views.js';
import { currentView, historyView } from '../../src/warehouse/resource-types.js';
import { loadTypedColumns } from '../../src/warehouse/typed-columns.js';
import { testConfig } from '../helpers/environment.js';

/**
 * The analyst layer (docs/WAREHOUSE.md): typed columns immune to letter case, <t>_changes,
 * <t>_as_of, notified_at / loaded_at, the heads table behind <t>_current, and the mapping
 * applied by `migrate`. Versions are appended with plain INSERTs: the heads follow through the
 * database's trigger, whoever appends.
 */
const config = testConfig();
const log = createLogger('warn');
const pool = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test', log });
const s = quoteIdent(config.databaseSchema);

beforeAll(async () => {
  await migrate(pool, { schema: config.databaseSchema, log });
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
});

const t = (iso: string) => new Date(iso);
let offset = 0;

async function insert(type: string, id: string, version: number, fetchedAt: string, body: object | null, eventIds: string[] = []) {
  await pool.query(
    `INSERT INTO ${s}.resource_versions (resource_type, resource_id, version, fetched_at, deleted, body, content_hash, source_event_ids, source_events, customer_id, kafka_partition, kafka_offset)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::uuid[], $9, $10, 0, $11)`,
    [type, id, version, fetchedAt, body === null, body, `h-${id}-${version}`, eventIds, eventIds.map(() => 'ContractChanged'), null, offset++],
  );
}

async function webhook(id: string, receivedAt: string) {
  await pool.query(`INSERT INTO ${s}.webhook_events (event_id, event, received_at, payload) VALUES ($1, 'ContractChanged', $2, '{}')`, [id, receivedAt]);
}

const pascal = {
  Id: 'c-p',
  CustomerId: 'cu-1',
  PlanId: 'plan-a',
  PlanVariantId: 'var-1',
  LifecycleStatus: 'Active',
  StartDate: '2025-01-01T10:00:00.000Z',
  EndDate: null,
  BilledUntil: '2025-01-15T10:00:00.0000000Z',
  EscalationSuspended: false,
  CurrentPhase: { Type: 'Normal', StartDate: '2025-01-01T10:00:00.0000000Z' },
  Balance: -12.5,
};
const recase = (body: Record<string, unknown>, f: (k: string, i: number) => string) => Object.fromEntries(Object.entries(body).map(([k, v], i) => [f(k, i), v]));
const camel = (k: string) => k.charAt(0).toLowerCase() + k.slice(1);
const bodies: Record<string, Record<string, unknown>> = {
  'c-pascal': pascal,
  'c-camel': recase(pascal, camel),
  'c-upper': recase(pascal, (k) => k.toUpperCase()),
  'c-mixed': recase(pascal, (k, i) => [k, camel(k), k.toLowerCase(), k.toUpperCase()][i % 4] as string),
};

describe('typed columns', () => {
  it('equal the body\'s values whatever the letter case of its keys, in history and current', async () => {
    for (const [id, body] of Object.entries(bodies)) await insert('Contract', id, 1, '2025-02-01T00:00:00Z', body);
    for (const view of ['contract_history', 'contract_current']) {
      const { rows } = await pool.query(
        `SELECT resource_id, status, plan_id, plan_variant_id, start_date, end_date, billed_until, escalation_suspended, current_phase_type, balance::text AS balance
           FROM ${s}.${view} WHERE resource_id LIKE 'c-%' ORDER BY resource_id`,
      );
      expect(rows.length, view).toBe(4);
      for (const r of rows) {
        expect({ ...r, resource_id: undefined }, `${view} ${r.resource_id}`).toEqual({
          resource_id: undefined,
          status: 'Active',
          plan_id: 'plan-a',
          plan_variant_id: 'var-1',
          start_date: t('2025-01-01T10:00:00Z'),
          end_date: null,
          billed_until: t('2025-01-15T10:00:00Z'),
          escalation_suspended: false,
          current_phase_type: 'Normal',
          balance: '-12.5',
        });
      }
    }
  });

  it('a value of the wrong type is NULL, the query does not fail, and typed_column_errors counts it', async () => {
    const before = await pool.query(`SELECT versions FROM ${s}.typed_column_errors WHERE resource = 'contract' AND column_name = 'start_date'`);
    expect(before.rows).toEqual([]);
    await insert('Contract', 'bad-1', 1, '2025-02-02T00:00:00Z', { ...pascal, StartDate: 'next tuesday', EscalationSuspended: 'maybe', PlanId: { nested: true } });
    await insert('Contract', 'bad-2', 1, '2025-02-03T00:00:00Z', { ...recase(pascal, camel), startDate: 42 });
    const { rows } = await pool.query(`SELECT resource_id, start_date, escalation_suspended, plan_id, status FROM ${s}.contract_current WHERE resource_id LIKE 'bad-%' ORDER BY resource_id`);
    expect(rows).toEqual([
      { resource_id: 'bad-1', start_date: null, escalation_suspended: null, plan_id: null, status: 'Active' },
      { resource_id: 'bad-2', start_date: null, escalation_suspended: false, plan_id: 'plan-a', status: 'Active' },
    ]);
    const errors = await pool.query(`SELECT column_name, json_key, sql_type, versions::int, last_resource_id FROM ${s}.typed_column_errors WHERE resource = 'contract' ORDER BY column_name`);
    expect(errors.rows).toEqual([
      { column_name: 'escalation_suspended', json_key: 'EscalationSuspended', sql_type: 'boolean', versions: 1, last_resource_id: 'bad-1' },
      { column_name: 'plan_id', json_key: 'PlanId', sql_type: 'text', versions: 1, last_resource_id: 'bad-1' },
      { column_name: 'start_date', json_key: 'StartDate', sql_type: 'timestamptz', versions: 2, last_resource_id: 'bad-2' },
    ]);
  });

  it('every type\'s history and current views have the public columns, then the mapping\'s typed columns in its order', async () => {
    const typed = await loadTypedColumns();
    const common = ['resource_id', 'version', 'valid_from', 'valid_to', 'is_current', 'deleted', 'body', 'content_hash', 'source_event_id', 'source_event'];
    for (const type of RESOURCE_TYPES) {
      const expected = [...common, ...(type === 'Contract' ? ['customer_id'] : []), 'notified_at', 'loaded_at', ...typed[type].map((c) => c.column)];
      for (const view of [historyView(type), currentView(type)]) {
        const { rows } = await pool.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, [config.databaseSchema, view]);
        expect(rows.map((r) => r.column_name), view).toEqual(expected);
      }
      expect(typed[type].length, type).toBeGreaterThan(0);
    }
  });
});

describe('wh_field', () => {
  it('finds a top-level key in any letter case, and is inlined into the query that calls it', async () => {
    const { rows } = await pool.query(
      `SELECT b::text AS body, ${s}.wh_field(b, 'StartDate', 'startDate', 'startdate') AS v
         FROM unnest(ARRAY['{"StartDate":1}', '{"startDate":2}', '{"startdate":3}', '{"STARTDATE":4}', '{"sTaRtDaTe":null}', '{"Other":6}', '[7]', '"s"']::jsonb[]) AS b`,
    );
    expect(rows.map((r) => r.v)).toEqual([1, 2, 3, 4, null, null, null, null]);
    // A SQL function whose body has a sub-select runs through the function executor at every
    // call (about ten times the lookups' cost): the scan for other spellings is a function of its own.
    const plan = await pool.query(`EXPLAIN VERBOSE SELECT ${s}.wh_field(b, 'StartDate', 'startDate', 'startdate') FROM unnest(ARRAY['{}']::jsonb[]) AS b`);
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toMatch(/COALESCE\(\(b -> 'StartDate'::text\)/);
    expect(text).not.toMatch(/wh_field\(/);
  });
});

describe('wh_as_timestamptz', () => {
  it('converts a string that is a timestamp, and gives NULL for anything else, never an error', async () => {
    const values = ['"2025-01-01T10:00:00Z"', '"2025-01-01T10:00:00+02:00"', '"2025-01-01"', '"2025-02-30T00:00:00Z"', '"x"', '20250101', 'true', 'null', '{}', '[1]'];
    const { rows } = await pool.query(`SELECT ${s}.wh_as_timestamptz(v) AS t FROM unnest($1::jsonb[]) WITH ORDINALITY AS u(v, n) ORDER BY n`, [values]);
    expect(rows.map((r) => (r.t === null ? null : (r.t as Date).toISOString()))).toEqual([
      '2025-01-01T10:00:00.000Z', '2025-01-01T08:00:00.000Z', '2025-01-01T00:00:00.000Z', null, null, null, null, null, null, null,
    ]);
  });
});

describe('<t>_changes', () => {
  it('lists exactly the changed top-level fields, names compared in any letter case', async () => {
    await insert('Customer', 'ch', 1, '2025-03-01T00:00:00Z', { Id: 'ch', CompanyName: 'Acme', IsLocked: false, Address: { City: 'Berlin' } });
    // Only the letter case changed: no change.
    await insert('Customer', 'ch', 2, '2025-03-02T00:00:00Z', { id: 'ch', companyName: 'Acme', isLocked: false, address: { City: 'Berlin' } });
    // A value changed (in yet another case), a field added, a nested value changed, a field removed.
    await insert('Customer', 'ch', 3, '2025-03-03T00:00:00Z', { ID: 'ch', COMPANYNAME: 'Acme Corp', IsLocked: false, Address: { City: 'Bonn' }, Locale: 'de-DE' });
    await insert('Customer', 'ch', 4, '2025-03-04T00:00:00Z', { Id: 'ch', CompanyName: 'Acme Corp', Address: { City: 'Bonn' }, Locale: 'de-DE' });
    const { rows } = await pool.query(`SELECT version, field, old_value, new_value FROM ${s}.customer_changes WHERE resource_id = 'ch' ORDER BY version, field`);
    expect(rows).toEqual([
      { version: 3, field: 'address', old_value: { City: 'Berlin' }, new_value: { City: 'Bonn' } },
      { version: 3, field: 'companyname', old_value: 'Acme', new_value: 'Acme Corp' },
      { version: 3, field: 'locale', old_value: null, new_value: 'de-DE' },
      { version: 4, field: 'islocked', old_value: false, new_value: null },
    ]);
  });

  it('answers "which contracts changed plan in a month" in one query', async () => {
    await insert('Contract', 'pc-1', 1, '2025-04-20T00:00:00Z', { PlanId: 'basic', LifecycleStatus: 'Active' });
    await insert('Contract', 'pc-1', 2, '2025-05-10T00:00:00Z', { planId: 'pro', lifecycleStatus: 'Active' });
    await insert('Contract', 'pc-2', 1, '2025-05-01T00:00:00Z', { PlanId: 'basic', LifecycleStatus: 'Active' });
    await insert('Contract', 'pc-2', 2, '2025-05-11T00:00:00Z', { PlanId: 'basic', LifecycleStatus: 'Cancelled' });
    await insert('Contract', 'pc-3', 1, '2025-04-01T00:00:00Z', { PlanId: 'basic' });
    await insert('Contract', 'pc-3', 2, '2025-06-02T00:00:00Z', { PlanId: 'pro' });
    const { rows } = await pool.query(
      `SELECT resource_id, old_value #>> '{}' AS old_plan, new_value #>> '{}' AS new_plan FROM ${s}.contract_changes
        WHERE field = 'planid' AND valid_from >= '2025-05-01' AND valid_from < '2025-06-01' ORDER BY resource_id`,
    );
    expect(rows).toEqual([{ resource_id: 'pc-1', old_plan: 'basic', new_plan: 'pro' }]);
  });
  it('equals a diff of the stored bodies, and a question on one field reads only where that field is kept', async () => {
    // Facts fields (PlanId, LifecycleStatus) and others (Notes, Seats, Tags), across a change of
    // letter case, a deletion and a re-creation.
    await insert('Contract', 'cd-1', 1, '2025-07-01T00:00:00Z', { PlanId: 'basic', LifecycleStatus: 'Active', Notes: 'a', Seats: 1 });
    await insert('Contract', 'cd-1', 2, '2025-07-02T00:00:00Z', { planId: 'pro', lifecycleStatus: 'Active', notes: 'b', seats: 1, tags: ['x'] });
    await insert('Contract', 'cd-1', 3, '2025-07-03T00:00:00Z', { PLANID: 'pro', LIFECYCLESTATUS: 'Ended', NOTES: 'b', TAGS: ['x', 'y'] });
    await insert('Contract', 'cd-1', 4, '2025-07-04T00:00:00Z', null);
    await insert('Contract', 'cd-1', 5, '2025-07-05T00:00:00Z', { PlanId: 'basic', Notes: 'c' });
    await insert('Contract', 'cd-2', 1, '2025-07-01T00:00:00Z', '"not an object"' as unknown as object);
    await insert('Contract', 'cd-2', 2, '2025-07-02T00:00:00Z', { PlanId: 'basic' });
    // The definition: every top-level field whose value differs from the previous stored version's.
    const fields = (b: string) => `SELECT lower(e.key) AS k, e.value FROM jsonb_each(CASE WHEN jsonb_typeof(${b}) = 'object' THEN ${b} END) e`;
    const reference = await pool.query(
      `SELECT r.resource_id, r.version, d.field, d.old_value, d.new_value
         FROM ${s}.resource_versions r
         JOIN LATERAL (SELECT p.body FROM ${s}.resource_versions p WHERE p.resource_type = r.resource_type AND p.resource_id = r.resource_id
                        AND p.version < r.version ORDER BY p.version DESC LIMIT 1) prev ON true
         CROSS JOIN LATERAL (SELECT COALESCE(nf.k, pf.k) AS field, pf.value AS old_value, nf.value AS new_value
                               FROM (${fields('r.body')}) nf FULL JOIN (${fields('prev.body')}) pf ON pf.k = nf.k
                              WHERE nf.value IS DISTINCT FROM pf.value) d
        WHERE r.resource_type = 'Contract' AND r.resource_id LIKE 'cd-%'
        ORDER BY 1, 2, 3`,
    );
    const view = await pool.query(
      `SELECT resource_id, version, field, old_value, new_value FROM ${s}.contract_changes WHERE resource_id LIKE 'cd-%' ORDER BY 1, 2, 3`,
    );
    expect(view.rows).toEqual(reference.rows);
    expect(view.rows.filter((r) => r.resource_id === 'cd-1').map((r) => `${r.version}:${r.field}`)).toEqual([
      '2:notes', '2:planid', '2:tags',
      '3:lifecyclestatus', '3:seats', '3:tags',
      '4:lifecyclestatus', '4:notes', '4:planid', '4:tags',
      '5:notes', '5:planid',
    ]);
    const plan = async (field: string) =>
      (await pool.query(`EXPLAIN SELECT * FROM ${s}.contract_changes WHERE field = $1 AND valid_from >= '2025-07-01' AND valid_from < '2025-08-01'`, [field])).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    // A field version_facts keeps: compared there, no body is read.
    const kept = await plan('planid');
    expect(kept).toMatch(/version_facts/);
    expect(kept).not.toMatch(/jsonb_each|resource_versions p/);
    // The latest versions (current_facts) are read for the range only: a previous version is
    // always a closed one, and its lookup does not probe them.
    expect(kept.match(/ on current_facts\b/g)).toHaveLength(1);
    // Any other field: the bodies are compared, the facts are not.
    const other = await plan('notes');
    expect(other).toMatch(/jsonb_each/);
    expect(other).not.toMatch(/version_facts/);
  });
});

describe('<t>_as_of, heads and time columns', () => {
  it('gives every resource\'s state at a moment, deleted ones left out, with the _current columns', async () => {
    await insert('Order', 'o-1', 1, '2025-06-01T00:00:00Z', { Status: 'Open', TotalNet: 10 });
    await insert('Order', 'o-1', 2, '2025-06-03T00:00:00Z', { status: 'Completed', totalNet: 10 });
    await insert('Order', 'o-2', 1, '2025-06-02T00:00:00Z', { Status: 'Open' });
    await insert('Order', 'o-2', 2, '2025-06-04T00:00:00Z', null);
    await insert('Order', 'o-3', 1, '2025-06-05T00:00:00Z', { Status: 'Open' });
    const at = async (iso: string) =>
      (await pool.query(`SELECT resource_id, version, status, valid_to, is_current FROM ${s}.order_as_of($1) ORDER BY resource_id`, [iso])).rows;
    expect(await at('2025-05-31T00:00:00Z')).toEqual([]);
    expect(await at('2025-06-02T12:00:00Z')).toEqual([
      { resource_id: 'o-1', version: 1, status: 'Open', valid_to: t('2025-06-03T00:00:00Z'), is_current: false },
      { resource_id: 'o-2', version: 1, status: 'Open', valid_to: t('2025-06-04T00:00:00Z'), is_current: false },
    ]);
    // valid_from <= at: a version observed exactly at the moment counts.
    expect(await at('2025-06-03T00:00:00Z')).toEqual([
      { resource_id: 'o-1', version: 2, status: 'Completed', valid_to: null, is_current: true },
      { resource_id: 'o-2', version: 1, status: 'Open', valid_to: t('2025-06-04T00:00:00Z'), is_current: false },
    ]);
    expect(await at('2025-07-01T00:00:00Z')).toEqual([
      { resource_id: 'o-1', version: 2, status: 'Completed', valid_to: null, is_current: true },
      { resource_id: 'o-3', version: 1, status: 'Open', valid_to: null, is_current: true },
    ]);
    const now = await pool.query(`SELECT * FROM ${s}.order_as_of(now()) ORDER BY resource_id`);
    const current = await pool.query(`SELECT * FROM ${s}.order_current ORDER BY resource_id`);
    expect(now.rows).toEqual(current.rows);
  });

  it('_current follows the highest version: a late lower version does not move it, a deletion removes the resource', async () => {
    await insert('Invoice', 'i-1', 1, '2025-07-01T00:00:00Z', { Status: 'Draft' });
    await insert('Invoice', 'i-1', 3, '2025-07-03T00:00:00Z', { Status: 'Paid' });
    await insert('Invoice', 'i-1', 2, '2025-07-02T00:00:00Z', { Status: 'Sent' }); // a gap filled late
    const cur = await pool.query(`SELECT resource_id, version, status FROM ${s}.invoice_current`);
    expect(cur.rows).toEqual([{ resource_id: 'i-1', version: 3, status: 'Paid' }]);
    const history = await pool.query(`SELECT version, valid_to, is_current FROM ${s}.invoice_history ORDER BY version`);
    expect(history.rows).toEqual([
      { version: 1, valid_to: t('2025-07-02T00:00:00Z'), is_current: false },
      { version: 2, valid_to: t('2025-07-03T00:00:00Z'), is_current: false },
      { version: 3, valid_to: null, is_current: true },
    ]);
    await insert('Invoice', 'i-1', 4, '2025-07-04T00:00:00Z', null);
    expect((await pool.query(`SELECT * FROM ${s}.invoice_current`)).rows).toEqual([]);
    const latest = await pool.query(`SELECT resource_type, resource_id, version, deleted FROM ${s}.resource_latest WHERE resource_type = 'Invoice'`);
    expect(latest.rows).toEqual([{ resource_type: 'Invoice', resource_id: 'i-1', version: 4, deleted: true }]);
  });

  it('notified_at is the earliest ingress receipt among the version\'s webhooks, NULL for backfill; loaded_at is the insert time', async () => {
    const [a, b] = ['11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222'];
    await webhook(a, '2025-08-01T10:00:05Z');
    await webhook(b, '2025-08-01T10:00:01Z');
    const before = (await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!.now;
    await insert('PaymentTransaction', 'pt-1', 1, '2025-08-01T10:00:09Z', { Status: 'Succeeded', Amount: '19.99' }, [a, b]);
    await insert('PaymentTransaction', 'pt-2', 1, '2025-08-01T10:00:09Z', { Status: 'Succeeded', Amount: 5 });
    const { rows } = await pool.query(`SELECT resource_id, valid_from, notified_at, loaded_at, amount::text AS amount FROM ${s}.payment_transaction_current ORDER BY resource_id`);
    expect(rows.map((r) => ({ ...r, loaded_at: undefined }))).toEqual([
      { resource_id: 'pt-1', valid_from: t('2025-08-01T10:00:09Z'), notified_at: t('2025-08-01T10:00:01Z'), loaded_at: undefined, amount: '19.99' },
      { resource_id: 'pt-2', valid_from: t('2025-08-01T10:00:09Z'), notified_at: null, loaded_at: undefined, amount: '5' },
    ]);
    for (const r of rows) expect((r.loaded_at as Date).getTime()).toBeGreaterThanOrEqual(before.getTime());
  });
});

describe('the mapping', () => {
  it('a user adds a column by editing the mapping and migrating again; removing it drops it', async () => {
    const typed = await loadTypedColumns();
    const dir = await mkdtemp(join(tmpdir(), 'typed-columns-'));
    const file = join(dir, 'typed-columns.json');
    const extra = [
      { column: 'reference_code_upper', key: 'referenceCode', type: 'text' },
      { column: 'phases', key: 'Phases', type: 'jsonb' },
    ];
    await writeFile(file, JSON.stringify({ ...typed, Contract: [...typed.Contract, ...extra] }));
    await insert('Contract', 'm-1', 1, '2025-09-01T00:00:00Z', { REFERENCECODE: 'C-1', pHaSeS: [{ Type: 'Trial' }] });
    await migrate(pool, { schema: config.databaseSchema, log, typedColumnsFile: file });
    const { rows } = await pool.query(`SELECT reference_code_upper, phases FROM ${s}.contract_current WHERE resource_id = 'm-1'`);
    expect(rows).toEqual([{ reference_code_upper: 'C-1', phases: [{ Type: 'Trial' }] }]);
    const asOf = await pool.query(`SELECT reference_code_upper FROM ${s}.contract_as_of(now()) WHERE resource_id = 'm-1'`);
    expect(asOf.rows).toEqual([{ reference_code_upper: 'C-1' }]);

    await writeFile(file, JSON.stringify({ ...typed, Contract: typed.Contract.filter((c) => c.column !== 'reference_code') }));
    await migrate(pool, { schema: config.databaseSchema, log, typedColumnsFile: file });
    const cols = await pool.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'contract_current'`, [config.databaseSchema]);
    const names = cols.rows.map((r) => r.column_name);
    expect(names).not.toContain('reference_code');
    expect(names).not.toContain('reference_code_upper');

    await writeFile(file, JSON.stringify({ Contract: [{ column: 'version', key: 'Version', type: 'text' }] }));
    await expect(migrate(pool, { schema: config.databaseSchema, log, typedColumnsFile: file })).rejects.toThrow(/every view already has/);
    await migrate(pool, { schema: config.databaseSchema, log });
    expect(changesView('Contract')).toBe('contract_changes');
    expect(asOfFunction('Contract')).toBe('contract_as_of');
  });
});
