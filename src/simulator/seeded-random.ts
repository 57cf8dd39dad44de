/**
 * A small seeded pseudo-random generator (mulberry32). Scenarios must be reproducible from a
 * seed, and Math.random cannot be seeded; cryptographic quality is not needed here.
 */
export interface SeededRandom {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** True with probability `p` (0..1). */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** A 24-character lowercase hexadecimal identifier, the upstream's identifier style. */
  hexId(): string;
  /** An independent generator derived from this one's seed and `label`, so adding draws in one place does not shift another. */
  fork(label: string): SeededRandom;
}

export function createRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[int(0, items.length - 1)] as T;
    },
    hexId: () => {
      let id = '';
      for (let i = 0; i < 3; i++) id += Math.floor(next() * 0x100000000).toString(16).padStart(8, '0');
      return id;
    },
    fork: (label) => createRandom(hashString(`${seed}:${label}`)),
  };
}

/** FNV-1a: turns a label into a 32-bit seed. */
function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
