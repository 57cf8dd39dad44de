import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulatedPipeline, type SimulatedPipeline } from '../helpers/simulated-pipeline.js';

/** `run` (the whole pipeline in one process) with OPS_PORT: every stage's reasons and metrics there, none on the ingress port. */
let run: SimulatedPipeline;
beforeAll(async () => {
  run = await startSimulatedPipeline({ name: 'run-ops-port', sim: { seed: 7 }, config: { opsPort: 0 } });
});
afterAll(async () => {
  await run?.stop();
});

describe('run with OPS_PORT', () => {
  it("serves every stage's readiness reasons and metrics on OPS_PORT, and only the bare probes on the ingress port", async () => {
    const { url, opsUrl } = run.pipeline.ingress;
    expect(opsUrl).toBeDefined();
    const details = (await (await fetch(`${opsUrl}/readyz`)).json()) as { checks: Record<string, unknown> };
    // One check per stage and service: in one process, a shared name would hide one stage's answer.
    expect(Object.keys(details.checks)).toEqual(
      expect.arrayContaining(['ingress.kafka', 'ingress.schema-registry', 'enricher.kafka', 'enricher.schema-registry', 'sink.database', 'sink.schema-registry']),
    );
    const metrics = await (await fetch(`${opsUrl}/metrics`)).text();
    expect(metrics).toContain('billing_loader_ingress_');
    expect(metrics).toContain('billing_loader_sink_');
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    const bare = await (await fetch(`${url}/readyz`)).text();
    expect(bare).toMatch(/^\{"status":"(not )?ready"\}$/);
  });
});
