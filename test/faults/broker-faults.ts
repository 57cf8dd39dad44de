import { afterAll, beforeAll } from 'vitest';
import type { ScenarioResult } from '../../src/simulator/scenario-runner.js';
import type { StackService } from '../../src/stack/service.js';
import { waitFor } from '../helpers/wait-for.js';
import { startFaultRun, type FaultRun, type FaultRunOptions } from './fault-harness.js';
import { nativeKafka, startPrivateKafka, type PrivateService } from './private-services.js';

/**
 * What the broker fault tests share: a fault run whose Kafka broker is the test file's own
 * (private-services.ts), so that stopping it pulls nothing from under another test.
 */
export interface BrokerFaultRun {
  run: FaultRun;
  broker: StackService;
}

/** Registers the file's hooks: a private broker, then the fault run on it; both torn down after. Call at module level. */
export function useBrokerFaultRun(options: FaultRunOptions): () => BrokerFaultRun {
  let kafka: PrivateService | undefined;
  let run: FaultRun | undefined;
  beforeAll(async () => {
    if (!nativeKafka) return;
    kafka = await startPrivateKafka();
    run = await startFaultRun({ ...options, env: { ...options.env, KAFKA_BROKERS: kafka.address } });
  });
  afterAll(async () => {
    try {
      await run?.stop();
    } finally {
      await kafka?.dispose();
    }
  });
  return () => ({ run: run as FaultRun, broker: (kafka as PrivateService).service });
}

const refusals = (r: FaultRun) => r.sim.deliveries().filter((d) => d.attempts.some((a) => a.status === 503)).length;

/**
 * A broker outage: `stop` takes it away (default: a clean stop), the ingress refuses a delivery
 * it had not refused before (a 503: never a 2xx for a webhook it could not persist), then the
 * broker starts again and answers.
 */
export async function brokerOutage(r: FaultRun, broker: StackService, stop: () => Promise<void> = () => broker.stop()): Promise<void> {
  const refusedBefore = refusals(r);
  try {
    await stop();
    await waitFor(() => refusals(r) > refusedBefore, { timeoutMs: 60_000, what: 'a 503 from the ingress' });
  } finally {
    await broker.start();
    await broker.waitReady(90_000);
  }
}

/**
 * Steady load (the default scenario, looped) while `during` runs, once the warehouse has 30 rows,
 * and until 5 more events were sent after it: the faults strike a pipeline at work.
 */
export async function underSteadyLoad(r: FaultRun, during: () => Promise<void>): Promise<ScenarioResult> {
  const stopLoad = new AbortController();
  const scenario = r.sim.runScenario({ name: 'default', customers: 16, stepDelayMs: 100, loop: true, signal: stopLoad.signal });
  try {
    await r.waitForRows(30);
    await during();
    await r.eventsLater(5);
  } finally {
    stopLoad.abort();
  }
  return scenario;
}
