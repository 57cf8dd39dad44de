/**
 * Readiness of one process: each dependency (Kafka, registry, database, billing API) registers
 * a check; the process is ready when every check passes. A component that knows it cannot work
 * (e.g. credentials rejected, shutting down) sets a named condition with its reason.
 * Liveness is separate: the process is live unless something marked it not live.
 */
export type HealthCheck = () => Promise<void>;

export interface Readiness {
  ready: boolean;
  checks: Record<string, { ok: boolean; reason?: string }>;
}

export interface Liveness {
  live: boolean;
  /** Why not, by condition. */
  failing: Record<string, string>;
}

export interface Health {
  addCheck(name: string, check: HealthCheck): void;
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
  const conditions = new Map<string, string>();
  const deadly = new Map<string, string>();
  return {
    addCheck: (name, check) => void checks.set(name, check),
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
            result.checks[name] ??= { ok: true };
          } catch (err) {
            result.checks[name] = { ok: false, reason: err instanceof Error ? err.message : String(err) };
          }
        }),
      );
      result.ready = Object.values(result.checks).every((c) => c.ok);
      return result;
    },
    setLiveness(name, reason) {
      if (reason === undefined) deadly.delete(name);
      else deadly.set(name, reason);
    },
    liveness: () => ({ live: deadly.size === 0, failing: Object.fromEntries(deadly) }),
  };
}
