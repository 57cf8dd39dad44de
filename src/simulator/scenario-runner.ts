import { setTimeout as sleep } from 'node:timers/promises';
import type { BillingOperations } from './billing-operations.js';
import { DAY_MS } from './operation-context.js';
import type { PaymentOperations } from './payment-operations.js';
import { DEFAULT_STORIES, signupOnly, type Story } from './scenario-stories.js';
import type { SeededRandom } from './seeded-random.js';
import type { SimulatedClock } from './simulated-clock.js';

export const SCENARIO_NAMES = ['default', 'signups'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export interface ScenarioOptions {
  /** `default`: six kinds of customer lives that together send all events of spec 6.2; `signups`: signups only. Default `default`. */
  name?: ScenarioName;
  /** Customers, each living one story (the default scenario cycles through its stories). Default 12. */
  customers?: number;
  /** Each story starts at a seeded random simulated day in [0, spreadDays]. Default 14. */
  spreadDays?: number;
  /** Wall-clock pause between two simulated instants, in milliseconds. Default 0 (as fast as possible). */
  stepDelayMs?: number;
  /** When the customers' stories are done, start over with new customers, until stopped. Default false. */
  loop?: boolean;
  /** Aborting stops the run after the current instant. */
  signal?: AbortSignal;
}

export interface ScenarioResult {
  /** Events emitted during the run. */
  events: number;
  /** Customers whose stories ran. */
  customers: number;
  /** Simulated time at the start and the end of the run (ISO 8601 UTC). */
  simulatedStart: string;
  simulatedEnd: string;
  /** False when stopped before every planned action ran. */
  completed: boolean;
}

interface Planned {
  at: number;
  seq: number;
  action: () => void;
}

export interface ScenarioDeps {
  clock: SimulatedClock;
  billing: BillingOperations;
  payments: PaymentOperations;
  random: SeededRandom;
  eventCount(): number;
}

/**
 * Plays the scenario over simulated time: every story plans its actions up front, and the
 * actions run in simulated-time order (ties in planning order), so one seed gives one history.
 */
export async function runScenario(deps: ScenarioDeps, options: ScenarioOptions = {}): Promise<ScenarioResult> {
  const stories = options.name === 'signups' ? [signupOnly] : DEFAULT_STORIES;
  const customers = options.customers ?? 12;
  const spreadDays = options.spreadDays ?? 14;
  const stepDelayMs = options.stepDelayMs ?? 0;
  const firstEvent = deps.eventCount();
  const simulatedStart = deps.clock.now().toISOString();
  let ran = 0;
  let completed = true;
  do {
    const plan = planPopulation(deps, stories, customers, spreadDays);
    ran += customers;
    let lastAt: number | undefined;
    for (const item of plan) {
      if (options.signal?.aborted) {
        completed = false;
        break;
      }
      if (lastAt !== undefined && item.at !== lastAt) {
        // Let the receiver (and the dispatcher's timers) run between instants.
        await (stepDelayMs > 0 ? sleep(stepDelayMs) : new Promise((resolve) => setImmediate(resolve)));
        if (options.signal?.aborted) {
          completed = false;
          break;
        }
      }
      lastAt = item.at;
      deps.clock.advanceTo(new Date(item.at));
      item.action();
    }
    if (!completed) break;
    // A loop's next population starts a day after the last action.
    if (options.loop) deps.clock.advanceTo(new Date(deps.clock.now().getTime() + DAY_MS));
  } while (options.loop && !options.signal?.aborted);
  if (options.signal?.aborted) completed = false;
  return { events: deps.eventCount() - firstEvent, customers: ran, simulatedStart, simulatedEnd: deps.clock.now().toISOString(), completed };
}

function planPopulation(deps: ScenarioDeps, stories: readonly Story[], customers: number, spreadDays: number): Planned[] {
  const origin = deps.clock.now().getTime();
  const plan: Planned[] = [];
  for (let i = 0; i < customers; i++) {
    const story = stories[i % stories.length]!;
    // Whole days keep a story's own intervals exact (TriggerDays counts whole days); the hour interleaves stories.
    const start = origin + deps.random.int(0, spreadDays) * DAY_MS + deps.random.int(0, 23) * 3_600_000 + deps.random.int(0, 59) * 60_000;
    story({
      at: (day, action) => plan.push({ at: start + day * DAY_MS, seq: plan.length, action }),
      billing: deps.billing,
      payments: deps.payments,
      random: deps.random,
      now: () => deps.clock.now(),
    });
  }
  return plan.sort((a, b) => a.at - b.at || a.seq - b.seq);
}
