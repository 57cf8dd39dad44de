import { Gauge, type Registry } from 'prom-client';
import type { Health, Readiness } from './health.js';

/**
 * Readiness as metrics, so that an alert can say which process has been not ready, and why, for
 * how long, without a probe of its own: `billing_loader_ready` (1 or 0, what `/readyz` would
 * answer) and `billing_loader_readiness_check_ok{check,informational}` (1 or 0 per check and
 * condition; a condition that cleared has no series). Computed when scraped, by the same checks
 * as `/readyz` (live calls, bounded by its 2 s timeout each), not remembered from the last probe:
 * a process nobody probes (systemd) still reports its state.
 */
export function registerReadinessMetrics(registry: Registry, health: Health): void {
  const readiness = oncePerScrape(() => health.readiness(), 2);
  new Gauge({
    name: 'billing_loader_ready',
    help: 'Whether the process is ready (1) or not (0), as GET /readyz would answer when scraped',
    registers: [registry],
    async collect() {
      this.set((await readiness()).ready ? 1 : 0);
    },
  });
  new Gauge({
    name: 'billing_loader_readiness_check_ok',
    help: 'Each readiness check and condition when scraped: 1 passing, 0 failing (informational: a failure that does not make the process not ready)',
    labelNames: ['check', 'informational'],
    registers: [registry],
    async collect() {
      const { checks } = await readiness();
      this.reset();
      for (const [check, c] of Object.entries(checks)) this.set({ check, informational: String(c.informational === true) }, c.ok ? 1 : 0);
    },
  });
}

/**
 * The registry collects both gauges of a scrape at once: they share one readiness (one round of
 * live calls), forgotten once both took it, or at the next turn of the event loop when a scrape
 * read only one of them.
 */
function oncePerScrape(compute: () => Promise<Readiness>, takers: number): () => Promise<Readiness> {
  let pending: Promise<Readiness> | undefined;
  let taken = 0;
  return () => {
    if (!pending) {
      const p = compute();
      pending = p;
      taken = 0;
      setImmediate(() => {
        if (pending === p) pending = undefined;
      });
    }
    const p = pending;
    if (++taken === takers) pending = undefined;
    return p;
  };
}
