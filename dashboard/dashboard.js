// The analysts' page: reads the dashboard's JSON endpoints and draws them with chart.js.
'use strict';

const COLORS = ['#2563eb', '#16a34a', '#f59e0b', '#9ca3af', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d', '#ea580c'];
const MOVEMENT_LABELS = {
  new: 'New', trial_start: 'Trial start', trial_conversion: 'Trial conversion', trial_not_converted: 'Trial not converted',
  plan_change: 'Plan change', cancellation: 'Cancellation', reactivation: 'Reactivation', churn: 'Churn',
};
const MOVEMENT_COLORS = { new: '#2563eb', trial_start: '#93c5fd', trial_conversion: '#16a34a', trial_not_converted: '#9ca3af', plan_change: '#0891b2', cancellation: '#ea580c', reactivation: '#7c3aed', churn: '#dc2626' };
const STATUS_LABELS = { in_trial: 'In trial', active: 'Active', cancelled_running: 'Cancelled, running', ended: 'Ended' };
const STATUS_COLORS = { in_trial: '#f59e0b', active: '#2563eb', cancelled_running: '#ea580c', ended: '#9ca3af' };

const MRR_MOVEMENT_LABELS = { new: 'New', expansion: 'Expansion', reactivation: 'Reactivation', contraction: 'Contraction', churn: 'Churn' };
const MRR_MOVEMENT_COLORS = { new: '#2563eb', expansion: '#16a34a', reactivation: '#7c3aed', contraction: '#f59e0b', churn: '#dc2626' };

const $ = (id) => document.getElementById(id);
const fmt = new Intl.NumberFormat('en');
const fmtMoney = new Intl.NumberFormat('en', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const fmtPercent = new Intl.NumberFormat('en', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const charts = {};

Chart.defaults.font.family = getComputedStyle(document.documentElement).fontFamily;
Chart.defaults.font.size = 12;
Chart.defaults.color = '#5b6475';
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.plugins.legend.position = 'bottom';
Chart.defaults.plugins.legend.labels.boxWidth = 12;

/** Draws a chart, or gives an existing one its new data. */
function draw(id, type, labels, datasets, options) {
  const existing = charts[id];
  if (existing) {
    existing.data.labels = labels;
    existing.data.datasets = datasets;
    existing.update();
    return;
  }
  charts[id] = new Chart($(id), { type, data: { labels, datasets }, options: { interaction: { mode: 'index', intersect: false }, ...options } });
}

const axes = (yTitle, extra = {}) => ({
  x: { ticks: { maxTicksLimit: 10, maxRotation: 0 }, grid: { display: false }, ...(extra.stacked ? { stacked: true } : {}) },
  y: { beginAtZero: true, title: { display: true, text: yTitle }, ticks: extra.money || extra.percent ? {} : { precision: 0 }, ...(extra.stacked ? { stacked: true } : {}) },
  ...(extra.y1 ? { y1: { position: 'right', beginAtZero: true, title: { display: true, text: extra.y1 }, grid: { drawOnChartArea: false }, ...(extra.y1max ? { max: extra.y1max } : {}) } } : {}),
});

async function api(path) {
  const res = await fetch(path);
  const body = await res.json();
  if (!res.ok) throw Object.assign(new Error(body.message || `HTTP ${res.status}`), { status: res.status });
  return body;
}

function setStatus(text, isError = false) {
  $('status').textContent = text;
  $('status').classList.toggle('error', isError);
}

const range = () => `from=${encodeURIComponent($('from').value)}&to=${encodeURIComponent($('to').value)}`;
const line = (label, data, color, extra = {}) => ({ label, data, borderColor: color, backgroundColor: color, pointRadius: data.length < 40 ? 3 : 0, borderWidth: 2, tension: 0.2, ...extra });
const bar = (label, data, color, extra = {}) => ({ label, data, backgroundColor: color, borderWidth: 0, maxBarThickness: 48, ...extra });
const hours = (h) => (h === null ? 'n/a' : h < 48 ? `${fmt.format(h)} h` : `${fmt.format(Math.round(h / 2.4) / 10)} days`);

// ---- revenue ----

/** The chosen currency: a code, or 'reporting' (every currency through the analyst's fx_rates). */
const currency = () => $('currency').value;
const money = (v) => (v === null || v === undefined ? 'n/a' : `${fmtMoney.format(v)}${currency() === 'reporting' ? '' : ` ${currency()}`}`);
const percent = (v) => (v === null || v === undefined ? 'n/a' : `${fmtPercent.format(v)} %`);
const ratioPercent = (v) => (v === null || v === undefined ? null : v * 100);

async function loadCurrencies() {
  const c = await api('/api/currencies');
  const options = [...(c.reporting ? [['reporting', 'All, in reporting currency']] : []), ...c.currencies.map((code) => [code, code])];
  $('currency').replaceChildren(...options.map(([value, label]) => el('option', { value }, label)));
  $('currency').disabled = options.length === 0;
}

async function loadRevenue() {
  if (!currency()) {
    $('revenue-month').textContent = 'no contract has a currency yet';
    return;
  }
  const d = await apiForRange(`/api/revenue?${range()}&currency=${encodeURIComponent(currency())}`);
  draw('chart-mrr', 'line', d.months, [
    line('MRR', d.mrr, '#2563eb', { fill: true, backgroundColor: '#2563eb22' }),
    line('ARR', d.arr, '#16a34a', { yAxisID: 'y1', borderDash: [4, 3] }),
  ], { scales: axes('MRR', { y1: 'ARR', money: true }) });
  draw('chart-mrr-movements', 'bar', d.months, [
    { type: 'line', label: 'Net new MRR', data: d.netNewMrr, borderColor: '#1d2330', backgroundColor: '#1d2330', pointRadius: d.months.length < 40 ? 3 : 0, borderWidth: 2, order: 0 },
    ...Object.keys(MRR_MOVEMENT_LABELS).map((k) => bar(MRR_MOVEMENT_LABELS[k], d.movements[k], MRR_MOVEMENT_COLORS[k], { order: 1 })),
  ], { scales: axes('MRR', { stacked: true, money: true, signed: true }) });
  draw('chart-churn', 'line', d.months, [
    line('Logo churn (%)', d.logoChurnPercent, '#dc2626'),
    line('Revenue churn (%)', d.revenueChurnPercent, '#f59e0b'),
    line('NRR (%)', d.nrr.map(ratioPercent), '#2563eb', { yAxisID: 'y1' }),
    line('GRR (%)', d.grr.map(ratioPercent), '#16a34a', { yAxisID: 'y1', borderDash: [4, 3] }),
  ], { scales: axes('churn, %', { y1: 'retention, %', percent: true }) });
  draw('chart-arpa', 'line', d.months, [
    line('ARPA', d.arpa, '#7c3aed'),
    bar('Paying customers', d.customers, '#93c5fd', { type: 'bar', yAxisID: 'y1', order: 1 }),
  ], { scales: axes('ARPA', { y1: 'customers', money: true }) });

  // The headline is the range's last month with MRR (the running month: at today).
  let last = d.months.length - 1;
  while (last >= 0 && d.mrr[last] === null && d.customers[last] === null) last -= 1;
  const at = (series) => (last < 0 ? null : series[last]);
  $('revenue-month').textContent = last < 0 ? 'no MRR in the range' : `in ${d.months[last]}`;
  $('revenue-month').dataset.month = last < 0 ? '' : d.months[last];
  $('kpi-mrr').textContent = money(at(d.mrr));
  $('kpi-mrr-sub').textContent = last < 0 ? '' : `at the end of ${d.months[last]}`;
  $('kpi-arr').textContent = money(at(d.arr));
  $('kpi-customers').textContent = at(d.customers) === null ? 'n/a' : fmt.format(at(d.customers));
  $('kpi-arpa').textContent = money(at(d.arpa));
  $('kpi-nrr').textContent = percent(ratioPercent(at(d.nrr)));
  $('kpi-grr').textContent = `gross ${percent(ratioPercent(at(d.grr)))}, month on month`;
  $('kpi-logo-churn').textContent = percent(at(d.logoChurnPercent));
  $('kpi-logo-churn-sub').textContent = last < 0 ? '' : `${fmt.format(at(d.churnedCustomers))} of ${fmt.format(at(d.startingCustomers))} customers`;
  $('kpi-revenue-churn').textContent = percent(at(d.revenueChurnPercent));
  const sum = (k) => d.movements[k].reduce((a, v) => a + (v ?? 0), 0);
  $('mrr-movements-total').textContent = `In range: ${Object.keys(MRR_MOVEMENT_LABELS).map((k) => `${MRR_MOVEMENT_LABELS[k].toLowerCase()} ${money(sum(k))}`).join(', ')}.`;
}

async function findCustomers(text) {
  const box = $('customer-results');
  box.replaceChildren(el('p', { class: 'legend' }, `Searching ${text}…`));
  let r;
  try {
    r = await api(`/api/customers?q=${encodeURIComponent(text)}`);
  } catch (err) {
    box.replaceChildren(el('p', { class: 'error-text', id: 'customer-error' }, err.message));
    return;
  }
  if (r.customers.length === 0) {
    box.replaceChildren(el('p', { class: 'legend', id: 'customer-none' }, `No customer's name, e-mail or external id contains ${text}.`));
    return;
  }
  const rows = r.customers.map((c) => {
    const a = el('a', { href: '#', 'data-id': c.id }, c.companyName ?? c.name ?? c.id);
    a.addEventListener('click', (e) => {
      e.preventDefault();
      $('resource-id').value = c.id;
      showTimeline(c.id).then(() => $('timeline').scrollIntoView({ block: 'nearest' }));
    });
    return el('tr', { 'data-id': c.id }, el('td', {}, a), el('td', {}, c.email ?? ''), el('td', {}, c.externalId ?? ''));
  });
  box.replaceChildren(
    el('table', { id: 'customer-table', class: 'results' }, el('thead', {}, el('tr', {}, el('th', {}, 'customer'), el('th', {}, 'e-mail'), el('th', {}, 'external id'))), el('tbody', {}, ...rows)),
    ...(r.more ? [el('p', { class: 'legend' }, 'More customers match: type more of the name.')] : []),
  );
}

$('customer-search').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('customer-text').value.trim();
  if (text) findCustomers(text);
});

async function loadContracts() {
  const d = await apiForRange(`/api/contract-daily?${range()}`);
  draw('chart-status', 'line', d.days, Object.keys(STATUS_LABELS).map((k) => line(STATUS_LABELS[k], d.byStatus[k], STATUS_COLORS[k])), { scales: axes('contracts') });
  draw('chart-plan', 'line', d.days, d.byPlan.map((p, i) => line(p.planName ? `${p.planName} (${p.planId.slice(-6)})` : p.planId, p.values, COLORS[i % COLORS.length], { fill: true, backgroundColor: `${COLORS[i % COLORS.length]}33` })), {
    scales: axes('contracts', { stacked: true }),
  });
  // The headline is the range's last day the view covers (contract_daily may end before payments do).
  let last = d.days.length - 1;
  while (last >= 0 && d.byStatus.active[last] === null) last -= 1;
  $('kpi-active').textContent = last < 0 ? '–' : fmt.format(d.byStatus.active[last]);
  $('kpi-trial').textContent = last < 0 ? '–' : fmt.format(d.byStatus.in_trial[last]);
  $('kpi-active-day').textContent = last < 0 ? 'no contract data in the range' : `on ${d.days[last]}`;
  $('kpi-trial-day').textContent = last < 0 ? '' : `on ${d.days[last]}`;
}

async function loadMovements() {
  const d = await apiForRange(`/api/movements?${range()}`);
  draw('chart-movements', 'bar', d.days, Object.keys(MOVEMENT_LABELS).map((k) => bar(MOVEMENT_LABELS[k], d.series[k], MOVEMENT_COLORS[k])), { scales: axes('contracts', { stacked: true }) });
  $('kpi-movements').textContent = fmt.format(d.total);
  $('movements-total').textContent = `In range: ${Object.keys(MOVEMENT_LABELS).map((k) => `${MOVEMENT_LABELS[k].toLowerCase()} ${fmt.format(d.totals[k])}`).join(', ')}.`;
}

async function loadCohorts() {
  const d = await apiForRange(`/api/trial-cohorts?${range()}`);
  draw('chart-cohorts', 'bar', d.months, [
    bar('Trials', d.trials, '#93c5fd'),
    bar('Converted', d.converted, '#2563eb'),
    { type: 'line', label: 'Conversion rate (%)', data: d.ratePercent, yAxisID: 'y1', borderColor: '#16a34a', backgroundColor: '#16a34a', pointRadius: 4 },
  ], { scales: axes('trials', { y1: 'converted, %', y1max: 100 }) });
  $('cohort-table').tBodies[0].replaceChildren(...d.months.map((m, i) => el('tr', { 'data-month': m },
    el('td', {}, m), el('td', {}, fmt.format(d.trials[i])), el('td', {}, fmt.format(d.converted[i])),
    el('td', {}, d.ratePercent[i] === null ? 'n/a' : `${fmtPercent.format(d.ratePercent[i])} %`),
    el('td', {}, fmt.format(d.stillInTrial[i])), el('td', {}, fmt.format(d.notConverted[i])))).reverse());
}

async function loadEpisodes() {
  const d = await apiForRange(`/api/episodes?${range()}`);
  draw('chart-episodes', 'bar', d.weeks, [bar('Dunning', d.dunningStarted, '#f59e0b'), bar('Payment escalation', d.escalationStarted, '#dc2626')], { scales: axes('episodes started') });
  $('kpi-dunning-open').textContent = fmt.format(d.dunning.openNow);
  $('kpi-escalation-open').textContent = fmt.format(d.escalation.openNow);
  $('episodes-figures').textContent = `Median time to resolution of those started in range: dunning ${hours(d.dunning.medianResolutionHours)} (${d.dunning.resolved} of ${d.dunning.started} resolved), escalation ${hours(d.escalation.medianResolutionHours)} (${d.escalation.resolved} of ${d.escalation.started} resolved).`;
}

async function loadPayments() {
  const d = await apiForRange(`/api/payments?${range()}`);
  draw('chart-payments', 'bar', d.days, [bar('Succeeded', d.succeeded, '#16a34a'), bar('Failed', d.failed, '#dc2626')], { scales: axes('transactions', { stacked: true }) });
  $('kpi-success').textContent = d.successRatePercent === null ? 'n/a' : `${d.successRatePercent} %`;
  $('payments-figures').textContent = `In range: ${fmt.format(d.totalSucceeded)} succeeded, ${fmt.format(d.totalFailed)} failed.`;
}

async function loadPipeline() {
  const d = await apiForRange('/api/pipeline-health');
  draw('chart-pipeline', 'bar', d.minutes, [
    bar('Webhooks / min', d.webhooks, '#93c5fd'),
    bar('Versions / min', d.versions, '#2563eb'),
    line('Freshness p99 (s)', d.freshnessP99S, '#f59e0b', { type: 'line', yAxisID: 'y1' }),
    line('Freshness p50 (s)', d.freshnessP50S, '#16a34a', { type: 'line', yAxisID: 'y1', borderDash: [4, 3] }),
  ], { scales: axes('per minute', { y1: 'seconds' }) });
  const dead = d.deadLetters.reduce((a, b) => a + b, 0);
  $('pipeline-figures').textContent = d.minutes.length ? `${fmt.format(dead)} dead letters in this window.` : 'No loading recorded yet.';
}

// Each loadAll is a generation; a chart is drawn only from the answers of the latest one, so an
// answer for an earlier range that arrives late never redraws over the range on screen.
let generation = 0;
class Superseded extends Error {}
async function apiForRange(path) {
  const mine = generation;
  const d = await api(path);
  if (mine !== generation) {
    // Announced on the document, so that whoever watches the page (a browser test) knows the
    // answer arrived and was dropped, without waiting for a while.
    document.dispatchEvent(new CustomEvent('answer-superseded', { detail: { path } }));
    throw new Superseded();
  }
  return d;
}

async function loadAll() {
  const from = $('from').value;
  const to = $('to').value;
  if (!from || !to || from > to) {
    setStatus('Choose a start day on or before the end day.', true);
    return;
  }
  const mine = ++generation;
  document.body.dataset.loaded = '';
  setStatus(`Loading ${from} to ${to}…`);
  try {
    await Promise.all([loadRevenue(), loadContracts(), loadMovements(), loadCohorts(), loadEpisodes(), loadPayments(), loadPipeline()]);
    if (mine !== generation) return;
    setStatus(`Showing ${from} to ${to}.`);
    document.body.dataset.currency = currency();
    document.body.dataset.loaded = `${from}..${to}`;
  } catch (err) {
    if (err instanceof Superseded) return;
    setStatus(`Could not load the charts: ${err.message}`, true);
  }
}

let whole = null;
async function start() {
  try {
    // Neither needs the other: asked at once.
    const [r] = await Promise.all([api('/api/range'), loadCurrencies()]);
    whole = r.range;
  } catch (err) {
    setStatus(`Could not read the warehouse: ${err.message}`, true);
    return;
  }
  if (!whole) {
    setStatus('The warehouse has no data yet.');
    return;
  }
  for (const id of ['from', 'to']) {
    $(id).min = whole.from;
    $(id).max = whole.to;
  }
  $('from').value = whole.from;
  $('to').value = whole.to;
  $('from').addEventListener('change', loadAll);
  $('to').addEventListener('change', loadAll);
  $('currency').addEventListener('change', loadAll);
  $('whole-range').addEventListener('click', () => {
    $('from').value = whole.from;
    $('to').value = whole.to;
    loadAll();
  });
  await loadAll();
}

// ---- timeline of one resource ----

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(c);
  return node;
}

function shown(value) {
  if (value === null || value === undefined) return '∅';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 90 ? `${text.slice(0, 87)}…` : text;
}

async function showTimeline(id) {
  const box = $('timeline');
  box.replaceChildren(el('p', { class: 'legend' }, `Reading ${id}…`));
  let t;
  try {
    t = await api(`/api/timeline?id=${encodeURIComponent(id)}`);
  } catch (err) {
    box.replaceChildren(el('p', { class: 'error-text', id: 'timeline-error' }, err.message));
    return;
  }
  const rows = t.versions.map((v) => {
    const changes = v.version === 1 ? [el('span', { class: 'change' }, 'first version')]
      : v.deleted ? [el('span', { class: 'change' }, 'deleted')]
        : v.changes.map((c) => el('span', { class: 'change', 'data-field': c.field, title: `${JSON.stringify(c.old)} → ${JSON.stringify(c.new)}` },
          el('span', { class: 'field' }, c.field), ': ', el('code', {}, shown(c.old)), ' → ', el('code', {}, shown(c.new))));
    return el('tr', { 'data-version': String(v.version) }, el('td', { class: 'num' }, String(v.version)), el('td', {}, v.validFrom.replace('T', ' ').replace('Z', ' UTC')), el('td', {}, v.sourceEvent ?? 'backfill'), el('td', {}, ...changes));
  });
  const related = t.related.map((r) => {
    const a = el('a', { href: '#', 'data-id': r.id }, `${r.type} ${r.id}`);
    a.addEventListener('click', (e) => {
      e.preventDefault();
      $('resource-id').value = r.id;
      showTimeline(r.id);
    });
    return a;
  });
  box.replaceChildren(
    el('p', { id: 'timeline-title' }, el('strong', {}, `${t.type} ${t.id}`), `: ${t.versions.length} version${t.versions.length === 1 ? '' : 's'}`),
    ...(related.length ? [el('p', { class: 'related' }, t.type === 'Contract' ? 'Customer: ' : 'Contracts: ', ...related)] : []),
    el('table', { id: 'timeline-table' }, el('thead', {}, el('tr', {}, el('th', {}, 'version'), el('th', {}, 'valid from'), el('th', {}, 'event'), el('th', {}, 'what changed'))), el('tbody', {}, ...rows)),
  );
}

$('search').addEventListener('submit', (e) => {
  e.preventDefault();
  const id = $('resource-id').value.trim();
  if (id) showTimeline(id);
});

start();
