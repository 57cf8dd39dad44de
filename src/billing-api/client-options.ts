import { requireBillingApi, type Config } from '../config.js';
import type { BillingApiClientOptions } from './client.js';
import { RESOURCE_TYPE_INFO, type ResourceType } from './resource-types.js';

/**
 * The client's options from the loader's configuration (BILLING_* variables). Fails with a
 * ConfigError naming the variable when a required one is missing.
 */
export function billingApiClientOptions(config: Config): BillingApiClientOptions {
  const { apiUrl, authUrl, clientId, grant } = requireBillingApi(config);
  const paths: Record<ResourceType, string> = {
    Contract: config.billingPathContract,
    Customer: config.billingPathCustomer,
    Order: config.billingPathOrder,
    Invoice: config.billingPathInvoice,
    InvoiceDraft: config.billingPathInvoiceDraft,
    Dunning: config.billingPathDunning,
    PaymentTransaction: config.billingPathPaymentTransaction,
    // Unset: the enricher never reads the type; the client keeps the default path for a caller that asks anyway.
    PaymentEscalationProcess: config.billingPathPaymentEscalationProcess ?? RESOURCE_TYPE_INFO.PaymentEscalationProcess.path,
    Plan: config.billingPathPlan,
    PlanVariant: config.billingPathPlanVariant,
    PlanGroup: config.billingPathPlanGroup,
    Component: config.billingPathComponent,
  };
  return {
    apiUrl,
    authUrl,
    clientId,
    grant,
    requestsPerSecond: config.billingApiRequestsPerSecond,
    burst: config.billingApiBurst,
    maxConcurrency: config.billingApiMaxConcurrency,
    requestTimeoutMs: config.billingApiTimeoutMs,
    maxAttempts: config.billingApiMaxAttempts,
    ...(config.billingLegalEntityId !== undefined ? { legalEntityId: config.billingLegalEntityId } : {}),
    paths,
  };
}
