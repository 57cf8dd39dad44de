import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createPartSizer, partEnd } from './batch-parts.js';

const messages = (keys: string[]): KafkaMessage[] => keys.map((key, i) => ({ key: Buffer.from(key), value: null, offset: String(i), timestamp: '0', attributes: 0, headers: {} }) as unknown as KafkaMessage);

describe('partEnd', () => {
  it('takes the longest run naming at most the given number of resources, repeats included', () => {
    const batch = messages(['a', 'b', 'a', 'c', 'b', 'd']);
    expect(partEnd(batch, 0, 2)).toBe(3);
    expect(partEnd(batch, 3, 2)).toBe(5);
    expect(partEnd(batch, 0, 10)).toBe(6);
  });

  it('always takes at least one message', () => {
    expect(partEnd(messages(['a', 'b']), 1, 0)).toBe(2);
  });
});

describe('createPartSizer', () => {
  it('sizes the next part to the target at the rate achieved, growing at most twofold', () => {
    const sizer = createPartSizer(5000, 100);
    expect(sizer.size()).toBe(100);
    sizer.record(100, 500); // 200/s: 1,000 would take 5 s, but at most twice what was measured
    expect(sizer.size()).toBe(200);
    sizer.record(200, 20_000); // 10/s: 50 take 5 s
    expect(sizer.size()).toBe(50);
  });

  it('stays small after small, quick batches', () => {
    const sizer = createPartSizer(5000, 100);
    sizer.record(2, 5); // twice the smallest part: a backlog starts small and doubles from there
    expect(sizer.size()).toBe(20);
  });
});
