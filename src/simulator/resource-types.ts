/**
 * The eight resource types the upstream's events refer to (spec section 2) and the four catalog
 * types (plans, plan variants, plan groups, components), with the path segment the simulator
 * serves them under. The paths are those of the service's public clients (docs/SIMULATOR.md
 * gives the sources); PaymentEscalationProcesses is an assumption: no path is documented.
 */
export const RESOURCE_TYPES = ['Contract', 'Customer', 'Order', 'Invoice', 'InvoiceDraft', 'Dunning', 'PaymentTransaction', 'PaymentEscalationProcess', 'Plan', 'PlanVariant', 'PlanGroup', 'Component'] as const;

export type ResourceType = (typeof RESOURCE_TYPES)[number];

export const RESOURCE_PATHS: Readonly<Record<ResourceType, string>> = {
  Contract: 'Contracts',
  Customer: 'Customers',
  Order: 'Orders',
  Invoice: 'Invoices',
  InvoiceDraft: 'InvoiceDrafts',
  Dunning: 'Dunnings',
  PaymentTransaction: 'PaymentTransactions',
  PaymentEscalationProcess: 'PaymentEscalationProcesses',
  Plan: 'Plans',
  PlanVariant: 'PlanVariants',
  PlanGroup: 'PlanGroups',
  Component: 'Components',
};

export function isResourceType(value: string): value is ResourceType {
  return (RESOURCE_TYPES as readonly string[]).includes(value);
}
