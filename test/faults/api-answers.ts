import type { Simulator } from '../../src/simulator/simulator.js';

/** Answers of the billing API (resource and token routes) whose outcome matches, e.g. /^5\d\d$/, /^429$/, /^hang$/. */
export function apiAnswers(sim: Simulator, outcome: RegExp): number {
  let n = 0;
  for (const [route, outcomes] of Object.entries(sim.stats().requests.byRoute)) {
    if (!/^(GET \/api\/v1\/|POST \/oauth\/token)/.test(route)) continue;
    for (const [o, count] of Object.entries(outcomes)) if (outcome.test(o)) n += count;
  }
  return n;
}
