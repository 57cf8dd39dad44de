import { describe, expect, it } from 'vitest';
import { createCommitVisibility } from './commit-visibility.js';

function clock() {
  let t = 0;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}
const stable = (offsets: Record<string, Record<number, number>>) => (topic: string) => (offsets[topic] ? new Map(Object.entries(offsets[topic]).map(([p, o]) => [Number(p), BigInt(o)])) : undefined);

describe('commit visibility', () => {
  it('reports a partition whose committed records stay beyond its last stable offset, once', () => {
    const c = clock();
    const v = createCommitVisibility({ hiddenAfterMs: 60_000, now: c.now });
    v.committed([{ topic: 'requests', partition: 2, end: '11' }, { topic: 'heads', partition: 0, end: '5' }]);
    c.advance(59_999);
    expect(v.check(stable({ requests: { 2: 10 }, heads: { 0: 5 } }))).toEqual([]);
    c.advance(1);
    expect(v.check(stable({ requests: { 2: 10 }, heads: { 0: 5 } }))).toEqual([{ topic: 'requests', partition: 2, lastStable: '10', end: '11', hiddenMs: 60_000 }]);
    // Reported once: the caller closes it; later commits are followed anew.
    expect(v.check(stable({ requests: { 2: 10 } }))).toEqual([]);
    expect(v.topics()).toEqual([]);
  });

  it('does not report a partition written steadily whose newest commits wait for their markers', () => {
    const c = clock();
    const v = createCommitVisibility({ hiddenAfterMs: 60_000, now: c.now });
    for (let i = 1; i <= 200; i++) {
      v.committed([{ topic: 'snapshots', partition: 1, end: String(i * 10) }]);
      c.advance(500);
      // The markers of the commit just made are not written yet; all earlier ones are.
      expect(v.check(stable({ snapshots: { 1: i * 10 - 5 } }))).toEqual([]);
    }
  });

  it('forgets a partition once its last stable offset passed every commit, and keeps one it cannot read', () => {
    const c = clock();
    const v = createCommitVisibility({ hiddenAfterMs: 1000, now: c.now });
    v.committed([{ topic: 'delayed', partition: 0, end: '3' }, { topic: 'gone', partition: 0, end: '1' }]);
    expect(v.check(stable({ delayed: { 0: 3 } }))).toEqual([]);
    expect(v.topics()).toEqual(['gone']);
    c.advance(1000);
    expect(v.check(stable({ gone: { 0: 0 } }))).toHaveLength(1);
  });

  it('clear() drops what was followed (new producers, new checks)', () => {
    const c = clock();
    const v = createCommitVisibility({ hiddenAfterMs: 10, now: c.now });
    v.committed([{ topic: 't', partition: 0, end: '9' }]);
    v.clear();
    c.advance(100);
    expect(v.check(stable({ t: { 0: 0 } }))).toEqual([]);
  });
});
