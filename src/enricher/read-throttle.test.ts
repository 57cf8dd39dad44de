import { describe, expect, it } from 'vitest';
import { createReadThrottle } from './read-throttle.js';

describe('createReadThrottle', () => {
  it('admits one read per key per interval, counting from the last admitted read', () => {
    const t = createReadThrottle(1000);
    expect(t.admit('a', 0)).toBe(true);
    expect(t.admit('a', 999)).toBe(false);
    expect(t.admit('b', 999)).toBe(true);
    expect(t.admit('a', 1000)).toBe(true);
    expect(t.admit('a', 1500)).toBe(false);
  });

  it('counts a head fetched within the interval as a read (a new owner after a rebalance)', () => {
    const t = createReadThrottle(1000);
    expect(t.admit('a', 5000, 4500)).toBe(false);
    expect(t.admit('a', 5500, 4500)).toBe(true);
  });

  it('with interval 0 admits every read', () => {
    const t = createReadThrottle(0);
    expect([t.admit('a', 1), t.admit('a', 1), t.admit('a', 1)]).toEqual([true, true, true]);
  });

  it('forgets the oldest keys past its bound', () => {
    const t = createReadThrottle(1000, 2);
    t.admit('a', 0);
    t.admit('b', 0);
    t.admit('c', 0);
    expect(t.admit('a', 1)).toBe(true);
    expect(t.admit('c', 1)).toBe(false);
  });
});
