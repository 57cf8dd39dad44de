import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { VERSION } from './version.js';

/**
 * One Prometheus registry per process, with the process metrics (CPU, RSS, event loop lag,
 * GC) and `billing_loader_build_info`. Each stage registers its own metrics on it, prefixed
 * `billing_loader_<stage>_`.
 */
export function createMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'billing_loader_' });
  // The pseudo-metric Prometheus's naming guide recommends: always 1, the build in its labels,
  // to join onto other series (`* on(instance) group_left(version) billing_loader_build_info`).
  new Gauge({ name: 'billing_loader_build_info', help: 'the running build: always 1, with the loader version and the Node.js version as labels', labelNames: ['version', 'node'], registers: [registry] }).set({ version: VERSION, node: process.version }, 1);
  return registry;
}
