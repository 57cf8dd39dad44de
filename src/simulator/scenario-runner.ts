import { setTimeout as sleep } from 'node:timers/promises';
import type { BillingOperations } from './billing-operations.js';
import type { CatalogOperations } from './catalog-operations.js';
import { DAY_MS } from './operation-context.js';
import type { PaymentOperations } from './payment-operations.js';
import { DEFAULT_STORIES, signupOnly, type Story } from './scenario-stories.js';
import type { SeededRandom } from './seeded-random.js';
import type { SimulatedClock } from './simulated-clock.js';

export const SCENARIO_NAMES = ['default', 'signups'] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export interface ScenarioOptions {
  /** `default`: six kinds of customer lives that together send all events of spec 6.2, and a catalog price rise; `signups`: signups only. Default `default`. */
  name?: ScenarioName;
  /** Customers, each living one story (the default scenario cycles through its stories). Default 12. */
  customers?: number;
  /** Each story starts at a seeded random simulated day in [0, spreadDays]. Default 14. */
  spreadDays?: number;
  /** Wall-clock pause between two simulated instants, in milliseconds. Default 0 (as fast as possible). Ignored with `durationMs`. */
  stepDelayMs?: number;
  /**
   * The story clock: the simulated history ends at `endAt` (for the demo: the wall clock's now
   * at the end of the run) and begins `historyDays` before it. Stories start in the first
   * `spreadDays` of that window and run until `endAt`: paid contracts are billed every period
   * until then, and nothing is planned after it. Default: no end, stories run to their last
   * planned action from the clock's current time.
   */
  endAt?: Date;
  /** Length of the simulated history that ends at `endAt`, in days. Default 180. */
  historyDays?: number;
  /**
   * Wall time to play the history over, in milliseconds: simulated time advances in proportion,
   * so the events arrive paced, each contract's changes seconds apart, rather than in a burst.
   * Default: use `stepDelayMs`.
   */
  durationMs?: number;
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
  catalog: CatalogOperations;
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
  const endAt = options.endAt?.getTime();
  if (endAt !== undefined) deps.clock.advanceTo(new Date(endAt - (options.historyDays ?? 180) * DAY_MS));
  const firstEvent = deps.eventCount();
  const simulatedStart = deps.clock.now().toISOString();
  const pace = endAt !== undefined && options.durationMs !== undefined ? pacer(deps.clock.now().getTime(), endAt, options.durationMs) : undefined;
  let ran = 0;
  let completed = true;
  do {
    const plan = planPopulation(deps, options.name === 'signups' ? [] : [catalogChanges], stories, customers, spreadDays, endAt);
    ran += customers;
    let lastAt: number | undefined;
    for (const item of plan) {
      if (options.signal?.aborted) {
        completed = false;
        break;
      }
      if (lastAt !== undefined && item.at !== lastAt) {
        // Let the receiver (and the dispatcher's timers) run between instants.
        const wait = pace ? pace(item.at) : stepDelayMs;
        await (wait > 0 ? sleep(wait) : new Promise((resolve) => setImmediate(resolve)));
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
    if (options.loop && endAt === undefined) deps.clock.advanceTo(new Date(deps.clock.now().getTime() + DAY_MS));
  } while (options.loop && endAt === undefined && !options.signal?.aborted);
  if (options.signal?.aborted) completed = false;
  else if (endAt !== undefined) {
    if (pace) await sleep(pace(endAt));
    deps.clock.advanceTo(new Date(endAt));
  }
  return { events: deps.eventCount() - firstEvent, customers: ran, simulatedStart, simulatedEnd: deps.clock.now().toISOString(), completed };
}

/** Milliseconds to wait until the wall-clock moment of simulated time `at`, the history [from, to] spread evenly over `durationMs` from now. */
function pacer(from: number, to: number, durationMs: number): (at: number) => number {
  const wallStart = Date.now();
  const scale = durationMs / Math.max(1, to - from);
  return (at) => Math.max(0, wallStart + (at - from) * scale - Date.now());
}

/**
 * The account's own story, once per population: a price rise
 * of 5 % (contracts are billed the new fees from their next period), a renamed plan, and a beta
 * plan launched and retired again: every catalog event.
 */
const catalogChanges: Story = (p) => {
  let beta: ReturnType<CatalogOperations['launchBeta']> | undefined;
  p.at(0, () => p.catalog.raisePrices(0.05));
  p.at(1, () => p.catalog.renamePlan(0, `Starter ${p.now().getUTCFullYear()}`));
  p.at(2, () => (beta = p.catalog.launchBeta('Team beta', 49)));
  p.at(12, () => beta && p.catalog.retire(beta));
};

function planPopulation(deps: ScenarioDeps, accountStories: readonly Story[], stories: readonly Story[], customers: number, spreadDays: number, endAt: number | undefined): Planned[] {
  const origin = deps.clock.now().getTime();
  const plan: Planned[] = [];
  const planStory = (story: Story, start: number) =>
    story({
      at: (day, action) => {
        const at = start + day * DAY_MS;
        // The history ends at endAt: what would come later has not happened yet.
        if (endAt === undefined || at <= endAt) plan.push({ at, seq: plan.length, action });
      },
      horizonDays: endAt === undefined ? undefined : (endAt - start) / DAY_MS,
      billing: deps.billing,
      payments: deps.payments,
      catalog: deps.catalog,
      random: deps.random,
      now: () => deps.clock.now(),
    });
  // The account's changes fall amid the customers' billing: halfway through the history, or a
  // month after the last signup when the history has no end (first bills come after 30 days).
  const accountStart = endAt !== undefined ? origin + Math.floor((endAt - origin) / DAY_MS / 2) * DAY_MS : origin + (spreadDays + 30) * DAY_MS;
  for (const story of accountStories) planStory(story, accountStart + 12 * 3_600_000);
  for (let i = 0; i < customers; i++) {
    const story = stories[i % stories.length]!;
    // Whole days keep a story's own intervals exact (TriggerDays counts whole days); the hour interleaves stories.
    const start = origin + deps.random.int(0, spreadDays) * DAY_MS + deps.random.int(0, 23) * 3_600_000 + deps.random.int(0, 59) * 60_000;
    planStory(story, start);
  }
  return plan.sort((a, b) => a.at - b.at || a.seq - b.seq);
}
