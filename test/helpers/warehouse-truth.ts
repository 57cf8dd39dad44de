import type pg from 'pg';
import { RESOURCE_TYPES, RESOURCE_TYPE_INFO, type ResourceType } from '../../src/billing-api/resource-types.js';
import { quoteIdent } from '../../src/db/pool.js';
import type { EmittedEvent, Simulator } from '../../src/simulator/simulator.js';
import type { TruthHistory } from '../../src/simulator/truth-store.js';

/**
 * The warehouse compared with the simulator's truth (docs/CONTRACT.md properties 1, 3, 9), from
 * PostgreSQL only. Every finding is collected as one readable line, so a failing test shows all
 * of them at once (`expect(report.problems).toEqual([])`), and the counts feed the fault matrix.
 */
export interface TruthReport {
  /** Objects with at least one version, over all types. */
  objects: number;
  versions: number;
  /** Pairs of consecutive versions of one resource with the same content (case-insensitive keys). */
  duplicateVersions: number;
  /** Versions missing from 1..n, or numbered twice. */
  gaps: number;
  problems: string[];
}

/** Ids the loader fetches for itself (the enricher's flush sentinels); not part of the truth. */
export const SENTINEL_PREFIX = 'sentinel-';

/** Which resource an identifier field of a webhook names (docs/CONTRACT.md, spec 6.2). */
const ID_FIELDS: Record<string, ResourceType> = {
  contractid: 'Contract',
  customerid: 'Customer',
  orderid: 'Order',
  invoiceid: 'Invoice',
  oldinvoiceid: 'Invoice',
  newinvoiceid: 'Invoice',
  oldinvoicedraftid: 'InvoiceDraft',
  newinvoicedraftid: 'InvoiceDraft',
  dunningid: 'Dunning',
  paymenttransactionid: 'PaymentTransaction',
  // Not here: the id of PaymentEscalated names escalation settings, which the loader reads only
  // where a path is configured (BILLING_PATH_PAYMENT_ESCALATION_PROCESS), so a webhook naming one
  // does not promise a version.
};

/** Canonical JSON: keys sorted (and, for `foldCase`, lower-cased), arrays in order. */
export function canonical(value: unknown, foldCase = false): string {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>).map(([k, x]) => [foldCase ? k.toLowerCase() : k, walk(x)] as const);
      return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  };
  return JSON.stringify(walk(value));
}

interface Row {
  resource_id: string;
  version: number;
  deleted: boolean;
  body: unknown;
  content_hash: string;
}

/**
 * For every object of every type: versions 1..n without a gap; consecutive versions differ in
 * content; each version's body is a true state, in the order the object had them (a subsequence
 * of `sim.history`); the latest version is the current truth, or a `deleted` version when the
 * object was deleted; no version for an object the simulator never had; and every object a
 * webhook named has a version (unless it was deleted before anyone could see it).
 *
 * `settled`: the simulator's deliveries are over and the pipeline drained, so the latest version
 * must be the current state; without it only the per-version properties are checked.
 */
export async function compareWarehouseToTruth(pool: pg.Pool, schema: string, sim: Simulator, options: { settled?: boolean } = {}): Promise<TruthReport> {
  const settled = options.settled ?? true;
  const report: TruthReport = { objects: 0, versions: 0, duplicateVersions: 0, gaps: 0, problems: [] };
  const named = namedByWebhooks(sim);
  for (const type of RESOURCE_TYPES) {
    const view = `${quoteIdent(schema)}.${quoteIdent(`${RESOURCE_TYPE_INFO[type].table}_history`)}`;
    const { rows } = await pool.query<Row>(`SELECT resource_id, version, deleted, body, content_hash FROM ${view} ORDER BY resource_id, version`);
    const byId = new Map<string, Row[]>();
    for (const r of rows) {
      if (r.resource_id.startsWith(SENTINEL_PREFIX)) continue;
      const list = byId.get(r.resource_id) ?? [];
      list.push(r);
      byId.set(r.resource_id, list);
    }
    for (const [id, versions] of byId) {
      report.objects++;
      report.versions += versions.length;
      checkObject(report, sim, type, id, versions, settled);
    }
    if (!settled) continue;
    for (const id of named.get(type) ?? []) {
      if (byId.has(id)) continue;
      const truth = sim.history(type, id);
      // Seen only as 404 (deleted before the first fetch), or never an object of the service (a
      // PaymentEscalated names the account's escalation settings, which the sandbox serves only
      // when configured): nothing to record, correctly.
      if (!truth || truth.deleted) continue;
      report.problems.push(`${type}:${id} was named by a webhook but has no version`);
    }
  }
  return report;
}

function checkObject(report: TruthReport, sim: Simulator, type: ResourceType, id: string, versions: Row[], settled: boolean): void {
  const at = `${type}:${JSON.stringify(id)}`;
  const truth = sim.history(type, id);
  if (!truth) {
    report.problems.push(`${at} has ${versions.length} version(s) but never existed (a false version)`);
    return;
  }
  const numbers = versions.map((v) => v.version);
  const expected = numbers.map((_, i) => i + 1);
  if (numbers.join() !== expected.join()) {
    report.gaps += expected.filter((n) => !numbers.includes(n)).length + (numbers.length - new Set(numbers).size);
    report.problems.push(`${at} versions are ${numbers.join(',')}, not 1..${numbers.length}`);
  }
  for (let i = 1; i < versions.length; i++) {
    const prev = versions[i - 1] as Row;
    const cur = versions[i] as Row;
    if (prev.content_hash === cur.content_hash || (prev.deleted === cur.deleted && canonical(prev.body, true) === canonical(cur.body, true))) {
      report.duplicateVersions++;
      report.problems.push(`${at} v${cur.version} has the same content as v${prev.version}`);
    }
  }
  const states = truth.states.map((s) => (s.deleted ? null : canonical(s.body)));
  let next = 0;
  for (const v of versions) {
    const body = v.deleted ? null : canonical(v.body);
    if (v.deleted !== (v.body === null)) report.problems.push(`${at} v${v.version}: deleted=${v.deleted} but body ${v.body === null ? 'null' : 'present'}`);
    while (next < states.length && states[next] !== body) next++;
    if (next >= states.length) {
      report.problems.push(`${at} v${v.version} is not a true state in order: ${(body ?? 'deleted').slice(0, 300)}`);
      return;
    }
    next++;
  }
  if (!settled) return;
  const last = versions[versions.length - 1] as Row;
  if (truth.deleted) {
    if (!last.deleted) report.problems.push(`${at} was deleted, but its latest version v${last.version} is not a deleted version`);
  } else if (last.deleted || canonical(last.body) !== canonical(sim.current(type, id))) {
    report.problems.push(`${at} latest version v${last.version} is not the current state (the truth has ${truth.states.length} state(s))`);
  }
}

/** Per type, every id an emitted webhook named in an identifier field. */
function namedByWebhooks(sim: Simulator): Map<ResourceType, Set<string>> {
  const named = new Map<ResourceType, Set<string>>();
  for (const e of sim.events()) {
    for (const [field, value] of Object.entries(e.payload)) {
      const type = ID_FIELDS[field.toLowerCase()];
      if (!type || typeof value !== 'string') continue;
      const ids = named.get(type) ?? new Set<string>();
      ids.add(value);
      named.set(type, ids);
    }
  }
  return named;
}

export interface WebhookCoverage {
  /** Deliveries the ingress acknowledged with a 2xx (the simulator's delivery records). */
  acknowledged: number;
  /** Acknowledged deliveries with no row in `webhook_events` (compared as a multiset of bodies). */
  lost: number;
  /** Rows beyond the acknowledged deliveries of the same body: a 503'd write that landed, then was retried. */
  extraRows: number;
  rows: number;
  problems: string[];
}

/**
 * Every delivery the simulator saw acknowledged (a 2xx on one of its attempts) is a row of
 * `webhook_events` (docs/CONTRACT.md property 1). Bodies are compared as a multiset of canonical JSON:
 * a duplicated delivery is two deliveries of one body and needs two rows.
 */
export async function compareWebhooksToDeliveries(pool: pg.Pool, schema: string, sim: Simulator): Promise<WebhookCoverage> {
  const acked = new Map<string, number>();
  let acknowledged = 0;
  for (const d of sim.deliveries()) {
    if (!d.attempts.some((a) => a.status !== undefined && a.status >= 200 && a.status < 300)) continue;
    acknowledged++;
    const key = canonical(d.payload);
    acked.set(key, (acked.get(key) ?? 0) + 1);
  }
  const { rows } = await pool.query<{ payload: unknown; n: string }>(`SELECT payload, count(*) AS n FROM ${quoteIdent(schema)}.webhook_events GROUP BY payload`);
  const stored = new Map<string, number>();
  let total = 0;
  for (const r of rows) {
    const key = canonical(r.payload);
    stored.set(key, (stored.get(key) ?? 0) + Number(r.n));
    total += Number(r.n);
  }
  const coverage: WebhookCoverage = { acknowledged, lost: 0, extraRows: 0, rows: total, problems: [] };
  for (const [body, n] of acked) {
    const have = stored.get(body) ?? 0;
    if (have < n) {
      coverage.lost += n - have;
      coverage.problems.push(`acknowledged ${n} time(s) but ${have} row(s) in webhook_events: ${body}`);
    }
  }
  for (const [body, n] of stored) coverage.extraRows += Math.max(0, n - (acked.get(body) ?? 0));
  return coverage;
}

/**
 * The scenario's truth as the simulator held it when the warehouse was filled: every object's
 * history and every event it emitted. Kept beside the warehouse (tables scenario_truth and
 * scenario_events of its schema, which no view reads), so that each test file of the run can
 * compute a metric from the truth, independently of the views, after the simulator has stopped.
 */
export interface ScenarioTruth {
  histories: TruthHistory[];
  events: EmittedEvent[];
}

export async function saveScenarioTruth(pool: pg.Pool, schema: string, sim: Simulator): Promise<void> {
  const s = quoteIdent(schema);
  const histories = RESOURCE_TYPES.flatMap((type) => sim.ids(type).map((id) => sim.history(type, id)!));
  await pool.query(`CREATE TABLE ${s}.scenario_truth (history jsonb NOT NULL)`);
  await pool.query(`INSERT INTO ${s}.scenario_truth (history) SELECT h FROM jsonb_array_elements($1::jsonb) AS h`, [JSON.stringify(histories)]);
  await pool.query(`CREATE TABLE ${s}.scenario_events (event jsonb NOT NULL)`);
  await pool.query(`INSERT INTO ${s}.scenario_events (event) SELECT e FROM jsonb_array_elements($1::jsonb) AS e`, [JSON.stringify(sim.events())]);
}

export async function loadScenarioTruth(pool: pg.Pool | pg.Client, schema: string): Promise<ScenarioTruth> {
  const s = quoteIdent(schema);
  const histories = (await pool.query<{ history: TruthHistory }>(`SELECT history FROM ${s}.scenario_truth`)).rows.map((r) => r.history);
  const events = (await pool.query<{ event: EmittedEvent }>(`SELECT event FROM ${s}.scenario_events`)).rows.map((r) => r.event).sort((a, b) => a.seq - b.seq);
  return { histories, events };
}
