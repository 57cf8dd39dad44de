import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.js';
import { RULES_FILE, RULES_TEST_FILE, alertRules, checkExprs, dashboard, dashboardExprs, headingAnchors, metricNames, promtool, ruleTests, sampleLabels, selectors } from './alert-files.js';

/**
 * The shipped alert rules and dashboard, checked by promtool (Debian's `prometheus` package):
 * the rules load, their unit tests pass, every alert has a case where it fires and one where it
 * does not, every runbook link lands on a heading of docs/OPERATIONS.md, and the dashboard is a
 * Grafana dashboard whose every query parses. That the metric names exist is checked against
 * running components (alert-metrics.test.ts).
 */
describe('deploy/prometheus/billing-loader-alerts.yml', () => {
  it('loads in Prometheus (promtool check rules)', async () => {
    const result = await promtool(['check', 'rules', RULES_FILE]);
    expect(result.output).toContain(`SUCCESS: ${alertRules().length} rules found`);
    expect(result.ok, result.output).toBe(true);
  });

  it('passes its unit tests (promtool test rules)', async () => {
    const result = await promtool(['test', 'rules', RULES_TEST_FILE]);
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toContain('SUCCESS');
  });

  it('has, for every alert, a unit test where it fires and one where it stays silent', () => {
    const cases = ruleTests().tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alertRules()) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(mine.some((c) => c.exp_alerts.length > 0), `${alert} fires in a test`).toBe(true);
      expect(mine.some((c) => c.exp_alerts.length === 0), `${alert} stays silent in a test`).toBe(true);
    }
  });

  it('gives every alert a severity, a summary, a description and a runbook that docs/OPERATIONS.md has', () => {
    const anchors = headingAnchors(readFileSync(join(packageRoot, 'docs', 'OPERATIONS.md'), 'utf8'));
    const names = alertRules().map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const rule of alertRules()) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
      expect(rule.annotations?.runbook_url, rule.alert).toBe(`docs/OPERATIONS.md#${rule.alert.toLowerCase()}`);
      expect(anchors, rule.alert).toContain(rule.alert.toLowerCase());
    }
  });

  it('links, in the runbooks of docs/OPERATIONS.md, only to headings that exist', () => {
    const doc = readFileSync(join(packageRoot, 'docs', 'OPERATIONS.md'), 'utf8');
    const anchors = headingAnchors(doc);
    const start = doc.indexOf('\n## Alerts and runbooks\n');
    expect(start).toBeGreaterThan(0);
    const end = doc.indexOf('\n## ', start + 1);
    const section = doc.slice(start, end === -1 ? undefined : end);
    const links = [...section.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(10);
    for (const link of links) expect(anchors, link).toContain(link);
  });
});

describe('deploy/grafana/billing-loader.json', () => {
  const board = dashboard();

  it('is a dashboard with a Prometheus data source variable that every query uses', () => {
    expect(board).toMatchObject({ uid: 'billing-loader', title: expect.any(String), schemaVersion: expect.any(Number) });
    expect(board.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }));
    const queries = board.panels.filter((p) => p.type !== 'row');
    expect(queries.length).toBeGreaterThan(10);
    for (const panel of queries) {
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      const refIds = (panel.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size, panel.title).toBe(refIds.length);
      for (const t of panel.targets ?? []) expect(t.datasource, panel.title).toEqual(panel.datasource);
    }
  });

  it('lays its panels out on the 24-column grid without overlaps, each id once', () => {
    const ids = board.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Map<string, string>();
    for (const p of board.panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x >= 0 && w > 0 && x + w <= 24 && y >= 0 && h > 0, p.title).toBe(true);
      for (let i = x; i < x + w; i++) {
        for (let j = y; j < y + h; j++) {
          const key = `${i},${j}`;
          expect(cells.get(key), `${p.title} overlaps`).toBeUndefined();
          cells.set(key, p.title);
        }
      }
    }
  });

  it('has queries that all parse as PromQL (promtool check rules on them as recording rules)', async () => {
    const exprs = dashboardExprs().map((e) => e.expr);
    const result = await checkExprs(exprs);
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toContain(`SUCCESS: ${exprs.length} rules found`);
    // The same check refuses a query that does not parse.
    expect((await checkExprs(['sum(rate(billing_loader_api_requests_total[5m])'])).ok).toBe(false);
  });

  it('reads metric names and label matchers out of PromQL, and label names out of /metrics, the way the metric check needs', () => {
    expect(metricNames('sum by (le) (rate(billing_loader_x_bucket{instance=~"a|b", le="+Inf"}[5m])) > 0 unless on(group) up{job="j"} offset 5m').sort()).toEqual(['billing_loader_x_bucket', 'up']);
    expect(metricNames('histogram_quantile(0.95, sum by (le) (rate(a_bucket[15m]))) > 120 and b == 0')).toEqual(['a_bucket', 'b']);
    expect(selectors('sum(rate(a_total{status=~"5..|x", endpoint!="token"}[5m])) / b{le="+Inf"}')).toEqual([{ metric: 'a_total', labels: ['status', 'endpoint'] }, { metric: 'b', labels: ['le'] }]);
    expect(sampleLabels('# TYPE a counter\na_total{stage="x",topic="t"} 3\nb 1\n')).toEqual(new Map([['a_total', new Set(['stage', 'topic'])], ['b', new Set()]]));
  });
});
