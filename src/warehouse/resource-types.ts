import { RESOURCE_TYPES, RESOURCE_TYPE_INFO, type ResourceType } from '../billing-api/resource-types.js';

/**
 * Names of the warehouse's public objects (docs/CONTRACT.md section 5), from the shared resource type
 * map. Migration 0002 creates the views for the same eight types. A type that is not in the map
 * is still stored in resource_versions (the snapshot schema keeps the type a string so a type the
 * billing service adds later does not break the sink); it has no view until a migration adds one.
 */
export const WAREHOUSE_TYPES: readonly ResourceType[] = RESOURCE_TYPES;

export function historyView(type: ResourceType): string {
  return `${RESOURCE_TYPE_INFO[type].table}_history`;
}

export function currentView(type: ResourceType): string {
  return `${RESOURCE_TYPE_INFO[type].table}_current`;
}

/** Cluster-wide roles created by migration 0002 (see docs/WAREHOUSE.md). */
export const WRITER_ROLE = 'billing_loader_writer';
export const ANALYST_ROLE = 'billing_loader_analyst';
