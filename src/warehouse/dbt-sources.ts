import { RESOURCE_TYPES, RESOURCE_TYPE_INFO, type ResourceType } from '../billing-api/resource-types.js';
import { baseColumns, type TypedColumns } from './typed-columns.js';

/**
 * The dbt package's source definitions (analytics/dbt/models/sources/billing.yml), rendered from
 * the typed column mapping so that the columns and descriptions dbt documents are the ones
 * `migrate` creates. src/warehouse/dbt-sources.test.ts keeps the committed file equal to this.
 */

export interface Column {
  name: string;
  description: string;
  /** dbt data test entries, already in YAML flow form (`not_null`, `unique`, ...). */
  tests?: string[];
}

export interface Table {
  name: string;
  description: string;
  columns: Column[];
  tests?: string[];
  /**
   * How `dbt source freshness` finds the newest load, with the package's thresholds: a column
   * whose newest value it reads, or a query that answers it.
   */
  loadedAt?: { field: string } | { query: string };
}

const COMMON: Record<string, string> = {
  resource_id: 'The resource\'s id in the billing service.',
  version: 'Version number of the resource: 1, 2, 3, ... gap-free, in fetch order.',
  valid_from: 'When the loader read this state from the API (after the real change by the webhook\'s delay: seconds, up to about two days).',
  valid_to: 'valid_from of the next version; null for the latest.',
  is_current: 'True for the latest version of the resource.',
  deleted: 'True when the API answered 404 for a resource that had existed (body is null).',
  body: 'The state as fetched, as JSON (property names as the service sent them).',
  content_hash: 'Hash of the canonical JSON of the body: consecutive versions never share it.',
  source_event_id: 'The webhook that caused the fetch; null for backfill and reconciliation versions.',
  source_event: 'That webhook\'s event name.',
  customer_id: 'The contract\'s customer (the body\'s CustomerId, in any letter case).',
  notified_at: 'Earliest ingress receipt among the webhooks that led to this version; null for backfill and reconciliation.',
  loaded_at: 'When the version was written to the warehouse (a rebuild changes it).',
};

/** Columns of the typed mapping that have a known set of values in the sandbox scenario. */
const VALUE_TESTS: Partial<Record<ResourceType, Record<string, string[]>>> = {
  Contract: {
    // Upstream data, not ours: a status the service adds later warns instead of failing the build.
    status: ["accepted_values: { arguments: { values: ['InTrial', 'Active', 'Ended', 'TrialExpired', 'TemporarilyInactive', 'Draft', 'InOrderProcess'] }, config: { severity: warn } }"],
  },
};

/**
 * The types whose history gets a source freshness check: those a running billing account changes
 * every day (contracts and customers sign up and end, invoices and payments follow each period).
 * The catalog (plans, components) can stay unchanged for months, and dunnings and escalations are
 * rare in a healthy account: a stale check there would cry wolf.
 */
const FRESHNESS_TYPES: ReadonlySet<ResourceType> = new Set(['Contract', 'Customer', 'Invoice', 'PaymentTransaction']);

function typedDescription(key: string, type: string): string {
  const what = key.includes('.') ? `The body's \`${key}\` (a nested key, each step in any letter case)` : `The body's \`${key}\` (any letter case)`;
  const as = type === 'date' ? 'date (the UTC date of a timestamp; a date-only value as it is)' : type;
  return `${what} as ${as}; null when absent, JSON null or not castable to ${type}.`;
}

function typeTables(type: ResourceType, typed: TypedColumns): Table[] {
  const t = RESOURCE_TYPE_INFO[type].table;
  const label = t.replace(/_/g, ' ');
  const columns = (): Column[] => [
    ...baseColumns(type).map((name) => ({
      name,
      description: COMMON[name] ?? '',
      tests: ['resource_id', 'version', 'valid_from', 'is_current', 'deleted'].includes(name) ? ['not_null'] : [],
    })),
    ...typed[type].map((c) => ({ name: c.column, description: typedDescription(c.key, c.type), tests: VALUE_TESTS[type]?.[c.column] ?? [] })),
  ];
  const current = columns();
  const idColumn = current.find((c) => c.name === 'resource_id');
  if (idColumn) idColumn.tests = ['not_null', 'unique'];
  return [
    {
      name: `${t}_history`,
      description: `Every stored version of every ${label}, one row per version.`,
      columns: columns(),
      tests: ["unique_combination: { arguments: { columns: ['resource_id', 'version'] } }"],
      // The newest loaded_at of the type, kept at write time (migration 0024): max(loaded_at) of the
      // view reads the whole history (4.5 s for the contracts of 10,000,000 versions).
      ...(FRESHNESS_TYPES.has(type) ? { loadedAt: { query: `select "{{ var('billing_loader_schema') }}".latest_loaded_at('${type}')` } } : {}),
    },
    { name: `${t}_current`, description: `The latest version of each ${label} that is not deleted.`, columns: current },
    {
      name: `${t}_changes`,
      description: `One row per changed top-level field per version of a ${label}, against its previous version (version 1 gives no row).`,
      columns: [
        { name: 'resource_id', description: COMMON.resource_id!, tests: ['not_null'] },
        { name: 'version', description: 'The version that made the change.', tests: ['not_null'] },
        { name: 'valid_from', description: COMMON.valid_from!, tests: ['not_null'] },
        { name: 'field', description: 'The top-level key, in lower case.', tests: ['not_null'] },
        { name: 'old_value', description: 'The JSON value before; SQL null when the key was absent.' },
        { name: 'new_value', description: 'The JSON value after; SQL null when the key is absent.' },
        { name: 'source_event_id', description: COMMON.source_event_id! },
        { name: 'source_event', description: COMMON.source_event! },
      ],
      tests: ["unique_combination: { arguments: { columns: ['resource_id', 'version', 'field'] } }"],
    },
  ];
}

const SHARED_TABLES: Table[] = [
  {
    name: 'resource_latest',
    description: 'The latest version of every resource, deleted ones included.',
    columns: [
      { name: 'resource_type', description: 'The billing service\'s type name (Contract, Customer, ...).', tests: ['not_null'] },
      { name: 'resource_id', description: COMMON.resource_id!, tests: ['not_null'] },
      { name: 'version', description: 'The latest version number.', tests: ['not_null'] },
      { name: 'valid_from', description: COMMON.valid_from!, tests: ['not_null'] },
      { name: 'deleted', description: COMMON.deleted!, tests: ['not_null'] },
    ],
    tests: ["unique_combination: { arguments: { columns: ['resource_type', 'resource_id'] } }"],
  },
  {
    name: 'webhook_events',
    description: 'One row per webhook the ingress accepted (redeliveries with the same id once).',
    loadedAt: { field: 'received_at' },
    columns: [
      { name: 'event_id', description: 'The webhook\'s id.', tests: ['not_null', 'unique'] },
      { name: 'event', description: 'The event name (ContractCreated, PaymentFailed, ...).', tests: ['not_null'] },
      { name: 'received_at', description: 'When the ingress accepted it.', tests: ['not_null'] },
      { name: 'payload', description: 'The webhook as received.', tests: ['not_null'] },
      { name: 'entity_id', description: 'The payload\'s EntityId (the legal entity); NULL when absent.' },
      { name: 'retry_count', description: 'The X-Retry-Count header of a redelivery; NULL on a first delivery.' },
    ],
  },
  {
    name: 'typed_column_errors',
    description: 'Per type and typed column, the versions whose value is present but does not cast. Reads the whole history: an operator\'s check, not a dashboard query. Empty when every value casts.',
    columns: [
      { name: 'resource', description: 'The type\'s warehouse name (contract, customer, ...).' },
      { name: 'column_name', description: 'The typed column.' },
      { name: 'json_key', description: 'The body key it reads.' },
      { name: 'sql_type', description: 'The declared SQL type.' },
      { name: 'versions', description: 'How many versions hold a value that does not cast.' },
      { name: 'first_valid_from', description: 'The first such version\'s valid_from.' },
      { name: 'last_valid_from', description: 'The last such version\'s valid_from.' },
      { name: 'last_resource_id', description: 'The resource of the last such version.' },
    ],
  },
];

const OUTCOMES = (values: string[]) => `accepted_values: { arguments: { values: [${values.map((v) => `'${v}'`).join(', ')}] } }`;

const EPISODE_COLUMNS = (kind: 'dunning' | 'escalation'): Column[] => [
  { name: 'episode_id', description: 'The episode\'s id.', tests: ['not_null', 'unique'] },
  kind === 'dunning'
    ? { name: 'dunning_id', description: 'The dunning resource the episode belongs to.', tests: ['not_null'] }
    : { name: 'contract_id', description: 'The contract in arrears (the PaymentEscalated webhooks\' ContractId).', tests: ['not_null'] },
  ...(kind === 'dunning' ? [{ name: 'contract_id', description: 'The contract in arrears.' }] : []),
  { name: 'customer_id', description: 'Its customer.' },
  { name: 'started_at', description: 'When the service told of its start (the ingress received the first escalation step or dunning).', tests: ['not_null'] },
  { name: 'ended_at', description: 'When the service told of its end (the ingress received PaymentEscalationReset); null while open.' },
  ...(kind === 'dunning'
    ? [
        { name: 'max_level', description: 'The highest dunning level reached.' },
        { name: 'levels_reached', description: 'The dunning levels reached, in order.' },
      ]
    : [
        { name: 'due_date', description: 'The DueDate of the latest step (of the oldest open position).' },
        { name: 'max_trigger_days', description: 'The highest TriggerDays reached.' },
        { name: 'trigger_days_reached', description: 'The TriggerDays steps reached, in order.' },
      ]),
  { name: 'outcome', description: 'paid, reset, unknown (the history does not show which) or open.', tests: ['not_null', OUTCOMES(['paid', 'reset', 'unknown', 'open'])] },
  { name: 'duration', description: 'ended_at - started_at; null while open.' },
  ...(kind === 'dunning'
    ? [
        { name: 'dunning_ids', description: 'Every dunning document of the episode.' },
        { name: 'first_document_date', description: 'The earliest DocumentDate of its dunnings.' },
      ]
    : []),
];

/** The metric views of `billing-loader migrate`: a source of their own, so a build can leave them out. */
export const METRIC_TABLES: Table[] = [
  {
    name: 'contract_daily',
    description: 'Per day and plan, how many contracts were in trial, active, cancelled but still running, ended.',
    columns: [
      { name: 'day', description: 'The day.', tests: ['not_null'] },
      { name: 'plan_id', description: 'The plan.' },
      { name: 'in_trial', description: 'Contracts in a Trial phase that day (cancelled or not).', tests: ['not_null'] },
      { name: 'active', description: 'Paying contracts (out of trial, not cancelled) that day.', tests: ['not_null'] },
      { name: 'cancelled_running', description: 'Cancelled contracts still running until their end date.', tests: ['not_null'] },
      { name: 'ended', description: 'Ended contracts.', tests: ['not_null'] },
    ],
    tests: ["unique_combination: { arguments: { columns: ['day', 'plan_id'] } }"],
  },
  {
    name: 'subscription_movements',
    description: 'Per day and kind of movement, how many contracts moved, and which.',
    columns: [
      { name: 'day', description: 'The day.', tests: ['not_null'] },
      {
        name: 'movement',
        description: 'new, trial_start, trial_conversion, trial_not_converted, plan_change, cancellation, reactivation or churn.',
        tests: ['not_null', OUTCOMES(['new', 'trial_start', 'trial_conversion', 'trial_not_converted', 'plan_change', 'cancellation', 'reactivation', 'churn'])],
      },
      { name: 'contracts', description: 'How many contracts.', tests: ['not_null'] },
      { name: 'contract_ids', description: 'Their ids.' },
    ],
    tests: ["unique_combination: { arguments: { columns: ['day', 'movement'] } }"],
  },
  {
    name: 'trial_cohorts',
    description: 'Per month of trial start, how many trials started and how many converted to paid.',
    columns: [
      { name: 'cohort_month', description: 'First day of the month the trials started.', tests: ['not_null', 'unique'] },
      { name: 'trials', description: 'Trials started.', tests: ['not_null'] },
      { name: 'converted', description: 'Of those, converted to paid.', tests: ['not_null'] },
      { name: 'conversion_rate', description: 'converted / trials.' },
      { name: 'still_in_trial', description: 'Not converted and the trial not over yet.' },
      { name: 'not_converted', description: 'The trial is over and never paid.' },
    ],
  },
  { name: 'dunning_episodes', description: 'One row per dunning episode: from the first dunning level to payment, reset, or still open.', columns: EPISODE_COLUMNS('dunning') },
  {
    name: 'payment_escalation_episodes',
    description: 'One row per payment escalation episode: from the first escalation step to payment, reset, or still open.',
    columns: EPISODE_COLUMNS('escalation'),
  },
  {
    name: 'payment_outcomes',
    description: 'Per day, provider and currency, payments succeeded and failed, counts and amounts.',
    columns: [
      { name: 'day', description: 'The day.', tests: ['not_null'] },
      { name: 'provider', description: 'The payment provider.' },
      { name: 'currency', description: 'The currency.' },
      { name: 'succeeded', description: 'Payments that succeeded.', tests: ['not_null'] },
      { name: 'failed', description: 'Payments that failed.', tests: ['not_null'] },
      { name: 'succeeded_amount', description: 'Their amount.' },
      { name: 'failed_amount', description: 'Their amount.' },
    ],
    tests: ["unique_combination: { arguments: { columns: ['day', 'provider', 'currency'] } }"],
  },
  {
    name: 'pipeline_health',
    description: 'Per minute: webhooks received, versions loaded, freshness (webhook receipt to load) percentiles, dead letters.',
    columns: [
      { name: 'minute', description: 'The minute.', tests: ['not_null', 'unique'] },
      { name: 'webhooks', description: 'Webhooks received.' },
      { name: 'versions', description: 'Versions loaded.' },
      { name: 'freshness_p50_s', description: 'Median seconds from webhook receipt to the version\'s load.' },
      { name: 'freshness_p99_s', description: '99th percentile of the same.' },
      { name: 'dead_letters', description: 'Records sent to a dead-letter topic.' },
    ],
  },
  {
    name: 'mrr_daily',
    description: 'One row per contract and UTC day with a paying span (a Normal phase with a plan variant) in force at the end of the day (at now() for today): its MRR from the variant\'s monthly fee x quantity.',
    columns: [
      { name: 'day', description: 'The UTC day.', tests: ['not_null'] },
      { name: 'contract_id', description: 'The contract.', tests: ['not_null'] },
      { name: 'customer_id', description: 'Its customer.' },
      { name: 'currency', description: 'The contract\'s Currency, upper case; null when it has none.' },
      { name: 'plan_id', description: 'The phase\'s plan.' },
      { name: 'plan_variant_id', description: 'The phase\'s plan variant.', tests: ['not_null'] },
      { name: 'quantity', description: 'The phase\'s Quantity (1 when absent).', tests: ['not_null'] },
      { name: 'mrr', description: 'The variant\'s monthly fee in force then x quantity, in currency; null when the variant was never read or its period unit is unknown.' },
      { name: 'rate_to_reporting', description: 'The fx_rates rate of the currency valid that day; null without one.' },
      { name: 'mrr_reporting', description: 'mrr x rate_to_reporting; null without a rate.' },
    ],
    tests: ["unique_combination: { arguments: { columns: ['day', 'contract_id'] } }"],
  },
  {
    name: 'mrr_movements',
    description: 'One row per customer, currency and UTC month with MRR at the month\'s end or the previous month\'s end: the MRR against the previous month\'s end and its movement (ChartMogul\'s kinds).',
    columns: [
      { name: 'month', description: 'First day of the UTC month.', tests: ['not_null'] },
      { name: 'customer_id', description: 'The customer.' },
      { name: 'currency', description: 'The contracts\' currency; null for contracts without one.' },
      { name: 'previous_mrr', description: 'MRR at the previous month\'s end (0: none).', tests: ['not_null'] },
      { name: 'mrr', description: 'MRR at the month\'s end (today for the running month; 0: churned).', tests: ['not_null'] },
      {
        name: 'movement',
        description: 'new (first MRR ever), reactivation (MRR again after none), expansion, contraction, churn (to none) or unchanged.',
        tests: ['not_null', OUTCOMES(['new', 'reactivation', 'expansion', 'contraction', 'churn', 'unchanged'])],
      },
      { name: 'amount', description: 'mrr - previous_mrr (negative for contraction and churn).', tests: ['not_null'] },
      { name: 'rate_to_reporting', description: 'The fx_rates rate of the currency valid on the month\'s end day; null without one.' },
      { name: 'previous_mrr_reporting', description: 'previous_mrr at that rate.' },
      { name: 'mrr_reporting', description: 'mrr at that rate.' },
      { name: 'amount_reporting', description: 'amount at that rate.' },
    ],
    tests: ["unique_combination: { arguments: { columns: ['month', 'customer_id', 'currency'] } }"],
  },
  {
    name: 'mrr_monthly',
    description: 'Per UTC month and currency (null: all currencies in the reporting currency): MRR, ARR, paying customers, ARPA, the MRR movements, net new MRR, starting MRR, NRR and GRR. Amounts null when a currency of the month has no rate (reporting row).',
    columns: [
      { name: 'month', description: 'First day of the UTC month.', tests: ['not_null'] },
      { name: 'currency', description: 'The currency; null: the reporting-currency row (every customer at the rate of the month\'s end).' },
      { name: 'mrr', description: 'MRR at the month\'s end.' },
      { name: 'arr', description: '12 x mrr.' },
      { name: 'customers', description: 'Customers with MRR > 0 at the month\'s end.', tests: ['not_null'] },
      { name: 'arpa', description: 'mrr / customers.' },
      { name: 'new', description: 'MRR of new customers.' },
      { name: 'expansion', description: 'MRR added by customers who paid more.' },
      { name: 'contraction', description: 'MRR lost by customers who paid less (negative).' },
      { name: 'churn', description: 'MRR lost by customers who stopped paying (negative).' },
      { name: 'reactivation', description: 'MRR of customers paying again.' },
      { name: 'net_new_mrr', description: 'new + expansion + contraction + churn + reactivation.' },
      { name: 'starting_mrr', description: 'MRR at the previous month\'s end.' },
      { name: 'nrr', description: 'Net revenue retention: the starting customers\' MRR now / starting_mrr.' },
      { name: 'grr', description: 'Gross revenue retention: the same, each customer capped at its starting MRR.' },
      { name: 'starting_customers', description: "Customers paying at the previous month's end (in any currency, for the reporting row)." },
      { name: 'churned_customers', description: "Of the starting customers, those paying nothing at this month's end: logo churn is churned_customers / starting_customers." },
    ],
    tests: ["unique_combination: { arguments: { columns: ['month', 'currency'] } }"],
  },
  {
    name: 'subscription_overview',
    description: 'One row per contract the loader knows (a deleted one from its last known body): its lifecycle, its state and plan now, and whether its customer was deleted.',
    columns: [
      { name: 'contract_id', description: 'The contract.', tests: ['not_null', 'unique'] },
      { name: 'customer_id', description: 'Its customer.' },
      { name: 'state', description: 'Now: not_started, in_trial, active, cancelled_running or ended.', tests: ['not_null', OUTCOMES(['not_started', 'in_trial', 'active', 'cancelled_running', 'ended'])] },
      { name: 'plan_id', description: 'Its plan now (its PlanId before its start).' },
      { name: 'start_date', description: 'Its StartDate.' },
      { name: 'trial_start_date', description: 'The start of its first Trial phase; null: no trial.' },
      { name: 'trial_end_date', description: 'Where the trial ends.' },
      { name: 'trial_outcome', description: 'converted, not_converted or in_trial; null without a trial.' },
      { name: 'converted_at', description: 'The start of the trial\'s first Normal phase, once come.' },
      { name: 'paying_from', description: 'When it started paying; null: never paid.' },
      { name: 'cancelled_at', description: 'Its latest cancellation, when the loader read it.' },
      { name: 'ended_at', description: 'The EndDate once come.' },
      { name: 'end_kind', description: 'churn or trial_not_converted; null while running.' },
      { name: 'deleted', description: 'The contract was deleted.' },
      { name: 'deleted_at', description: 'When the loader learnt of its deletion.' },
      { name: 'customer_deleted', description: 'Its customer was deleted.' },
      { name: 'customer_deleted_at', description: 'When the loader learnt of that.' },
    ],
  },
  {
    name: 'customer_overview',
    description: 'One row per customer the loader knows (a deleted one with its last known fields): its status and contracts now, when it first paid and when its last contract ended.',
    columns: [
      { name: 'customer_id', description: 'The customer.', tests: ['not_null', 'unique'] },
      { name: 'read', description: 'The loader read the customer (false: known by id only).' },
      { name: 'deleted', description: 'The customer was deleted.' },
      { name: 'deleted_at', description: 'When the loader learnt of its deletion.' },
      { name: 'created_at', description: 'Its CreatedAt.' },
      { name: 'last_read_at', description: 'When the loader last read it.' },
      { name: 'customer_name', description: 'Its CustomerName.' },
      { name: 'company_name', description: 'Its CompanyName.' },
      { name: 'first_name', description: 'Its FirstName.' },
      { name: 'last_name', description: 'Its LastName.' },
      { name: 'email_address', description: 'Its EmailAddress.' },
      { name: 'external_customer_id', description: 'Its ExternalCustomerId.' },
      { name: 'address_country', description: 'Its Address.Country.' },
      { name: 'locale', description: 'Its Locale.' },
      { name: 'is_locked', description: 'Its IsLocked.' },
      { name: 'status', description: 'Now: paying (a contract active or cancelled running), in_trial, ended or none.', tests: ['not_null', OUTCOMES(['paying', 'in_trial', 'ended', 'none'])] },
      { name: 'contracts', description: 'Its contracts.', tests: ['not_null'] },
      { name: 'contracts_in_trial', description: 'Of those, in trial now.', tests: ['not_null'] },
      { name: 'contracts_paying', description: 'Active or cancelled running now.', tests: ['not_null'] },
      { name: 'contracts_ended', description: 'Ended.', tests: ['not_null'] },
      { name: 'first_paid_at', description: 'When its first contract started paying.' },
      { name: 'last_ended_at', description: 'When its last contract ended.' },
    ],
  },
  {
    name: 'contract_segments',
    description: 'Each contract\'s states on the service\'s clock: one row per span [valid_from, valid_to) in one state on one plan, from its StartDate on (future spans the body already lists included).',
    columns: [
      { name: 'contract_id', description: 'The contract.', tests: ['not_null'] },
      { name: 'customer_id', description: 'Its customer.' },
      { name: 'state', description: 'in_trial, active, cancelled_running or ended.', tests: ['not_null', OUTCOMES(['in_trial', 'active', 'cancelled_running', 'ended'])] },
      { name: 'plan_id', description: 'The plan of its latest phase with a plan started by then, else its PlanId.' },
      { name: 'valid_from', description: 'The span\'s start.', tests: ['not_null'] },
      { name: 'valid_to', description: 'The next span\'s start; null: still so as far as the last known body says.' },
      { name: 'deleted', description: 'The contract was deleted.' },
      { name: 'deleted_at', description: 'When the loader learnt of its deletion.' },
    ],
    tests: ["unique_combination: { arguments: { columns: ['contract_id', 'valid_from'] } }"],
  },
];

/** Helpers of the metric views an analyst may reuse (warehouse/metric-views.sql): one definition each. */
export const METRIC_HELPER_TABLES: Table[] = [
  {
    name: 'metric_contract_lifecycle',
    description: 'One row per contract with a start date: its trial, conversion, paying start, cancellation and end, on the service\'s dates, counted by now.',
    columns: [
      { name: 'contract_id', description: 'The contract.', tests: ['not_null', 'unique'] },
      { name: 'customer_id', description: 'Its customer.' },
      { name: 'plan_id', description: 'Its PlanId.' },
      { name: 'start_date', description: 'Its StartDate.', tests: ['not_null'] },
      { name: 'end_date', description: 'Its EndDate (may lie ahead: a cancelled contract still running).' },
      { name: 'phases', description: 'Its Phases, as sent.' },
      { name: 'trial_start_date', description: 'The start of its first Trial phase; null: no trial.' },
      { name: 'trial_end_date', description: 'Where the trial ends: the next phase of another type, else the EndDate.' },
      { name: 'converted_at', description: 'The start of the trial\'s first Normal phase, once come and before the EndDate.' },
      { name: 'paying_from', description: 'When it started paying (converted_at, or the StartDate of a contract without a trial); null: never paid.' },
      { name: 'cancelled_at', description: 'Its latest cancellation (an EndDate set), when the loader read it.' },
      { name: 'ended_at', description: 'The EndDate once come.' },
      { name: 'end_kind', description: 'churn (it had paid) or trial_not_converted (it never paid); null while running.', tests: [OUTCOMES(['churn', 'trial_not_converted'])] },
      { name: 'trial_outcome', description: 'converted, not_converted or in_trial; null without a trial.', tests: [OUTCOMES(['converted', 'not_converted', 'in_trial'])] },
    ],
  },
];

const q = (s: string) => JSON.stringify(s);

function renderTables(tables: Table[]): string[] {
  const out: string[] = [];
  for (const table of tables) {
    out.push(`      - name: ${table.name}`, `        description: ${q(table.description)}`);
    if (table.tests?.length) out.push('        data_tests:', ...table.tests.map((t) => `          - ${t}`));
    if (table.loadedAt) {
      const hours = (v: string) => `{ count: "{{ var('billing_loader_freshness_${v}_after_hours') }}", period: hour }`;
      const loadedAt = 'field' in table.loadedAt ? `          loaded_at_field: ${table.loadedAt.field}` : `          loaded_at_query: ${q(table.loadedAt.query)}`;
      out.push('        config:', loadedAt, '          freshness:', `            warn_after: ${hours('warn')}`, `            error_after: ${hours('error')}`);
    }
    out.push('        columns:');
    for (const c of table.columns) {
      out.push(`          - name: ${c.name}`, `            description: ${q(c.description)}`);
      if (c.tests?.length) out.push('            data_tests:', ...c.tests.map((t) => `              - ${t}`));
    }
  }
  return out;
}

export function renderDbtSources(typed: TypedColumns): string {
  // The package's vars (analytics/dbt/dbt_project.yml), prefixed so that a host project's cannot clash.
  const schema = `"{{ var('billing_loader_schema') }}"`;
  const database = `"{{ var('billing_loader_database') or target.database }}"`;
  return [
    '# Generated from warehouse/typed-columns.json by src/warehouse/dbt-sources.ts: do not edit by hand.',
    '# After changing the mapping: npx vitest run src/warehouse/dbt-sources.test.ts -u',
    'version: 2',
    '',
    'sources:',
    '  - name: billing',
    '    description: "The public views of the billing-loader warehouse (docs/CONTRACT.md section 5)."',
    `    database: ${database}`,
    `    schema: ${schema}`,
    '    tables:',
    ...renderTables([...RESOURCE_TYPES.flatMap((t) => typeTables(t, typed)), ...SHARED_TABLES]),
    '',
    '  - name: billing_metrics',
    '    description: "The metric views `billing-loader migrate` creates over the history, in the same schema."',
    `    database: ${database}`,
    `    schema: ${schema}`,
    '    tables:',
    ...renderTables([...METRIC_TABLES, ...METRIC_HELPER_TABLES]),
    '',
  ].join('\n');
}
