import { expect } from 'vitest';
import type { ResourceType } from '../../src/billing-api/resource-types.js';
import type { EnricherHarness } from './enricher-harness.js';

/**
 * The versions published for one resource are exact (docs/CONTRACT.md property 3): 1..n without a gap
 * or a repeat, consecutive contents differ, and each version's body is one of the states the
 * simulator really had, in the order it had them (a subsequence of the true history).
 */
export function expectExactVersions(h: EnricherHarness, type: ResourceType, id: string): void {
  const published = h.snapshots.filter((s) => s.resource_type === type && s.resource_id === id);
  const numbers = published.map((v) => v.version).sort((a, b) => a - b);
  expect(numbers, `${type}:${id} versions`).toEqual(numbers.map((_, i) => i + 1));
  const versions = [...published].sort((a, b) => a.version - b.version);
  for (let i = 1; i < versions.length; i++) {
    expect(versions[i]?.content_hash, `${type}:${id} v${i + 1} repeats v${i}`).not.toBe(versions[i - 1]?.content_hash);
    expect(versions[i]?.fetched_at).toBeGreaterThan(versions[i - 1]?.fetched_at as number);
  }
  const truth = h.sim.history(type, id)?.states.map((s) => (s.deleted ? null : JSON.stringify(s.body))) ?? [];
  let at = 0;
  for (const v of versions) {
    const body = v.deleted ? null : JSON.stringify(JSON.parse(v.body as string));
    while (at < truth.length && truth[at] !== body) at++;
    expect(at, `${type}:${id} v${v.version} is not a true state in order`).toBeLessThan(truth.length);
    at++;
  }
}
