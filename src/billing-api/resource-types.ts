/**
 * The resource types of the billing service (spec section 2, and the product catalog: plans,
 * plan variants, plan groups, components) with their canonical names, their warehouse name, the
 * default REST path and how its list pages. The paths are those of the service's public clients
 * (docs/CONTRACT.md gives these defaults) and can be overridden per type.
 */
export const RESOURCE_TYPES = ['Contract', 'Customer', 'Order', 'Invoice', 'InvoiceDraft', 'Dunning', 'PaymentTransaction', 'PaymentEscalationProcess', 'Plan', 'PlanVariant', 'PlanGroup', 'Component'] as const;

export type ResourceType = (typeof RESOURCE_TYPES)[number];

export interface ResourceTypeInfo {
  /** snake_case name used by the warehouse views: `<table>_history`, `<table>_current`. */
  table: string;
  /** Default path under {base_url}/api/v1/, without the id. */
  path: string;
  /**
   * How the list endpoint pages (docs/BILLING-API.md): `cursor` = `?from=<Id>&take=` (stable,
   * `from` inclusive), `skip` = `?skip=&take=` only (the service refuses skip past 1000), `none` =
   * no list endpoint is known, so backfill cannot read the type.
   */
  paging: 'cursor' | 'skip' | 'none';
}

export const RESOURCE_TYPE_INFO: Readonly<Record<ResourceType, ResourceTypeInfo>> = Object.freeze({
  Contract: { table: 'contract', path: 'Contracts', paging: 'cursor' },
  Customer: { table: 'customer', path: 'Customers', paging: 'cursor' },
  Order: { table: 'order', path: 'Orders', paging: 'cursor' },
  Invoice: { table: 'invoice', path: 'Invoices', paging: 'cursor' },
  InvoiceDraft: { table: 'invoice_draft', path: 'InvoiceDrafts', paging: 'skip' },
  Dunning: { table: 'dunning', path: 'Dunnings', paging: 'cursor' },
  PaymentTransaction: { table: 'payment_transaction', path: 'PaymentTransactions', paging: 'cursor' },
  PaymentEscalationProcess: { table: 'payment_escalation_process', path: 'PaymentEscalationProcesses', paging: 'none' },
  Plan: { table: 'plan', path: 'Plans', paging: 'cursor' },
  PlanVariant: { table: 'plan_variant', path: 'PlanVariants', paging: 'cursor' },
  PlanGroup: { table: 'plan_group', path: 'PlanGroups', paging: 'cursor' },
  Component: { table: 'component', path: 'Components', paging: 'cursor' },
});

/** The types backfill can list (a list endpoint is known). */
export const LISTABLE_TYPES: readonly ResourceType[] = RESOURCE_TYPES.filter((t) => RESOURCE_TYPE_INFO[t].paging !== 'none');

export function isResourceType(name: string): name is ResourceType {
  return (RESOURCE_TYPES as readonly string[]).includes(name);
}

/** The Kafka key of a resource in the snapshot and internal topics: `<ResourceType>:<id>`. */
export function resourceKey(type: ResourceType, id: string): string {
  return `${type}:${id}`;
}

/** Splits a `<ResourceType>:<id>` key at the first colon (ids may contain colons). */
export function parseResourceKey(key: string): { type: ResourceType; id: string } | undefined {
  const at = key.indexOf(':');
  if (at < 0) return undefined;
  const type = key.slice(0, at);
  return isResourceType(type) ? { type, id: key.slice(at + 1) } : undefined;
}
