import { afterAll, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../src/simulator/operation-context.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';

/**
 * The story clock (docs/SIMULATOR.md, "The story clock"): a history that ends at the wall
 * clock's now, its events spread over the run, every paid contract billed every period.
 */
const running: Simulator[] = [];
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
});

describe('the story clock', () => {
  it('plays a history that ends now, paced over the run, with several states per contract and every period billed', async () => {
    const sim = await startSimulator({ seed: 17 });
    running.push(sim);
    const durationMs = 3000;
    const historyDays = 150;
    const wallStart = Date.now();
    const endAt = new Date(wallStart + durationMs);
    const result = await sim.runScenario({ customers: 18, historyDays, spreadDays: 90, endAt, durationMs });
    expect(result.completed).toBe(true);

    // The history ends at the wall clock's now: nothing happened in the future.
    expect(result.simulatedEnd).toBe(endAt.toISOString());
    expect(Date.parse(result.simulatedEnd)).toBeLessThanOrEqual(Date.now());
    expect(result.simulatedStart).toBe(new Date(endAt.getTime() - historyDays * DAY_MS).toISOString());
    const events = sim.events();
    expect(events.length).toBeGreaterThan(200);
    for (const e of events) {
      expect(e.simulatedAt >= result.simulatedStart && e.simulatedAt <= result.simulatedEnd, `${e.payload.Event} at ${e.simulatedAt}`).toBe(true);
    }
    const contracts = sim.ids('Contract');
    for (const id of contracts) {
      for (const s of sim.history('Contract', id)!.states) expect(s.simulatedAt <= result.simulatedEnd).toBe(true);
    }

    // Paced: no event is sent before its share of the run has passed (sleeps end late, never early).
    const span = Date.parse(result.simulatedEnd) - Date.parse(result.simulatedStart);
    for (const e of events) {
      const due = wallStart + ((Date.parse(e.simulatedAt) - Date.parse(result.simulatedStart)) / span) * durationMs;
      expect(Date.parse(e.wallAt), `${e.payload.Event} at ${e.simulatedAt}`).toBeGreaterThanOrEqual(Math.floor(due) - 2);
    }

    // Several states per contract: most contracts lived through more than a signup.
    const states = contracts.map((id) => sim.history('Contract', id)!.states.length).sort((a, b) => a - b);
    expect(states[Math.floor(states.length / 2)]).toBeGreaterThanOrEqual(3);

    // Billed every period: no live, paying contract has a billing date in the past, and its
    // invoices are a period apart.
    let paying = 0;
    for (const id of contracts) {
      const c = sim.current('Contract', id);
      if (!c || c.LifecycleStatus !== 'Active') continue;
      paying++;
      if (c.NextBillingDate !== null) expect(Date.parse(String(c.NextBillingDate)), `contract ${id}`).toBeGreaterThan(endAt.getTime());
      const created = sim.ids('Invoice').map((i) => sim.history('Invoice', i)!.states[0]!.body!).filter((b) => b.ContractId === id && b.CorrectsInvoiceId === null).map((b) => Date.parse(String(b.Created)));
      for (let i = 1; i < created.length; i++) expect(Math.round((created[i]! - created[i - 1]!) / DAY_MS)).toBe(30);
      if (c.BilledUntil !== null) expect(Date.parse(String(c.BilledUntil))).toBeGreaterThan(endAt.getTime() - 30 * DAY_MS);
    }
    expect(paying).toBeGreaterThan(5);
  });

  it('without an end, the history starts at the clock and runs to the stories end, as before', async () => {
    const sim = await startSimulator({ seed: 17, simulatedStart: new Date('2025-01-01T00:00:00Z') });
    running.push(sim);
    const result = await sim.runScenario({ customers: 6 });
    expect(result.simulatedStart).toBe('2025-01-01T00:00:00.000Z');
    expect(Date.parse(result.simulatedEnd)).toBeGreaterThan(Date.parse('2025-03-01T00:00:00Z'));
  });
});
