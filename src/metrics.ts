import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One Prometheus registry per process, with the process metrics (CPU, RSS, event loop lag,
 * GC). Each stage registers its own metrics on it, prefixed `billing_loader_<stage>_`.
 */
export function createMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'billing_loader_' });
  return registry;
}
