/**
 * The eight resource types the upstream's events refer to (spec section 2), with the path
 * segment the simulator serves them under. The spec does not show resource endpoints; these
 * paths are the project's assumption (docs/CONTRACT.md), documented in docs/SIMULATOR.md.
 */
export const RESOURCE_TYPES = ['Contract', 'Customer', 'Order', 'Invoice', 'InvoiceDraft', 'Dunning', 'PaymentTransaction', 'PaymentEscalationProcess'] as const;

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
};

export function isResourceType(value: string): value is ResourceType {
  return (RESOURCE_TYPES as readonly string[]).includes(value);
}
