import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { packageRoot } from '../../src/package-root.js';

/**
 * The shipped monitoring files (deploy/prometheus/, deploy/grafana/) read for the tests: the
 * alert rules, their promtool unit tests, the Grafana dashboard, and the PromQL expressions of
 * both with the metric names they use.
 */
export const RULES_FILE = join(packageRoot, 'deploy', 'prometheus', 'billing-loader-alerts.yml');
export const RULES_TEST_FILE = join(packageRoot, 'deploy', 'prometheus', 'billing-loader-alerts.test.yml');
export const DASHBOARD_FILE = join(packageRoot, 'deploy', 'grafana', 'billing-loader.json');

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RuleTests {
  tests: { name: string; alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { refId: string; expr: string; datasource?: { type?: string; uid?: string } }[];
}

export interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  templating: { list: { name: string; type: string; query: unknown; allValue?: string }[] };
  panels: DashboardPanel[];
}

export const alertRules = (): AlertRule[] => (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: AlertRule[] }[] }).groups.flatMap((g) => g.rules);
export const ruleTests = (): RuleTests => parse(readFileSync(RULES_TEST_FILE, 'utf8')) as RuleTests;
export const dashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;

/**
 * The dashboard's queries as Prometheus would receive them: Grafana replaces `$instance` (a
 * multi-value variable whose "All" is `.*`) inside the regex matcher before sending.
 */
export const dashboardExprs = (): { panel: string; expr: string }[] =>
  dashboard().panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr.replaceAll('$instance', '.*') })));

/** Metric names a PromQL expression selects: what is left once strings, label matchers, ranges, grouping clauses, functions and keywords are taken out. */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    // Numbers and durations (`offset 5m`), whose unit would read as a name.
    .replace(/(?<![A-Za-z0-9_:])\d+(?:\.\d+)?(?:ms|[smhdwy])?/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = stripped.slice((m.index ?? 0) + m[0].length);
    if (/^\s*\(/.test(after)) continue; // a function or an aggregation
    if (PROMQL_WORDS.has(m[0])) continue;
    names.add(m[0]);
  }
  return [...names];
}

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'Inf', 'NaN', 'inf', 'nan']);

/**
 * A metric name used by a query, as a /metrics page shows it: the name itself, or, for
 * `<h>_bucket`, `<h>_sum`, `<h>_count`, the histogram (or summary) `<h>`.
 */
export function exportedAs(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  const type = types.get(base);
  return type === 'histogram' || type === 'summary' ? base : undefined;
}

/** Each `name{label="…", …}` selector of a PromQL expression: the metric and the label names it matches on. */
export function selectors(expr: string): { metric: string; labels: string[] }[] {
  return [...expr.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}/g)].map((m) => ({
    metric: m[1] as string,
    labels: [...(m[2] as string).matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"/g)].map((l) => l[1] as string),
  }));
}

/** The label names each metric's samples carry on a Prometheus text page (only metrics with samples). */
export function sampleLabels(page: string): Map<string, Set<string>> {
  const labels = new Map<string, Set<string>>();
  for (const m of page.matchAll(/^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})? \S+$/gm)) {
    const set = labels.get(m[1] as string) ?? new Set<string>();
    for (const l of (m[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="/g)) set.add(l[1] as string);
    labels.set(m[1] as string, set);
  }
  return labels;
}

/** `# TYPE <name> <type>` of a Prometheus text page: every metric registered, with or without samples yet. */
export function metricTypes(page: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of page.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1] as string, m[2] as string);
  return types;
}

const run = promisify(execFile);

export interface PromtoolResult {
  ok: boolean;
  output: string;
}

/** promtool (Debian's `prometheus` package) with `args`; ok when it exits 0. */
export async function promtool(args: string[]): Promise<PromtoolResult> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: packageRoot });
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? e.message}` };
  }
}

/** `promtool check rules` on recording rules made of `exprs`: ok when every one parses. */
export async function checkExprs(exprs: string[]): Promise<PromtoolResult> {
  const dir = mkdtempSync(join(tmpdir(), 'dashboard-exprs-'));
  try {
    const file = join(dir, 'exprs.yml');
    const rules = exprs.map((expr, i) => `      - record: dashboard:expr_${i}\n        expr: ${JSON.stringify(expr)}\n`).join('');
    writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules}`);
    return await promtool(['check', 'rules', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** GitHub's anchor of a Markdown heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    anchors.add((m[1] as string).trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-'));
  }
  return anchors;
}
