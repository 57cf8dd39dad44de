/**
 * Readiness of one process: each dependency (Kafka, registry, database, billing API) registers
 * a check; the process is ready when every check passes. A component that knows it cannot work
 * (e.g. credentials rejected, shutting down) sets a named condition with its reason.
 * Liveness is separate: the process is live unless something marked it not live.
 */
export type HealthCheck = () => Promise<void>;

export interface Readiness {
  ready: boolean;
  /** Every check and condition; an `informational` one is reported but does not decide `ready`. */
  checks: Record<string, { ok: boolean; reason?: string; informational?: true }>;
}

export interface Liveness {
  live: boolean;
  /** Why not, by condition. */
  failing: Record<string, string>;
}

export interface Health {
  /** A check of a dependency; `informational`: reported in the reasons, but the process stays ready when it fails. */
  addCheck(name: string, check: HealthCheck, options?: { informational?: boolean }): void;
  /** Marks a condition not ready (with a reason), or ready again (`reason` undefined). */
  setCondition(name: string, reason: string | undefined): void;
  readiness(timeoutMs?: number): Promise<Readiness>;
  /**
   * Marks the process not live (with a reason), or live again (`reason` undefined): something a
   * restart of the whole process may cure and nothing inside it did (the stall watchdog's last step).
   */
  setLiveness(name: string, reason: string | undefined): void;
  liveness(): Liveness;
}

export function createHealth(): Health {
  const checks = new Map<string, HealthCheck>();
  const informational = new Set<string>();
  const conditions = new Map<string, string>();
  const deadly = new Map<string, string>();
  return {
    addCheck(name, check, options = {}) {
      checks.set(name, check);
      if (options.informational) informational.add(name);
      else informational.delete(name);
    },
    setCondition(name, reason) {
      if (reason === undefined) conditions.delete(name);
      else conditions.set(name, reason);
    },
    async readiness(timeoutMs = 2000) {
      const result: Readiness = { ready: true, checks: {} };
      for (const [name, reason] of conditions) result.checks[name] = { ok: false, reason };
      await Promise.all(
        [...checks].map(async ([name, check]) => {
          try {
            await Promise.race([check(), new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref())]);
            result.checks[name] ??= { ok: true, ...(informational.has(name) ? { informational: true as const } : {}) };
          } catch (err) {
            result.checks[name] = { ok: false, reason: err instanceof Error ? err.message : String(err), ...(informational.has(name) ? { informational: true as const } : {}) };
          }
        }),
      );
      result.ready = Object.values(result.checks).every((c) => c.ok || c.informational === true);
      return result;
    },
    setLiveness(name, reason) {
      if (reason === undefined) deadly.delete(name);
      else deadly.set(name, reason);
    },
    liveness: () => ({ live: deadly.size === 0, failing: Object.fromEntries(deadly) }),
  };
}
