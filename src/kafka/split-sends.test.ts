import { describe, expect, it } from 'vitest';
import { fitsAlone, recordSize, splitSends } from './split-sends.js';

const message = (key: string, size: number) => ({ key, value: Buffer.alloc(size) });

describe('splitSends', () => {
  it('keeps everything in one send when each topic fits', () => {
    const sends = splitSends([{ topic: 'a', messages: [message('k1', 100), message('k2', 100)] }, { topic: 'b', messages: [message('k3', 10)] }], () => 10_000);
    expect(sends).toHaveLength(1);
    expect(sends[0]?.map((t) => t.messages.length)).toEqual([2, 1]);
  });

  it('splits a topic over sends that each fit its limit, in order', () => {
    const messages = Array.from({ length: 400 }, (_, i) => message(`k${i}`, 4096));
    const limit = 1_048_588;
    const sends = splitSends([{ topic: 'snapshots', messages }, { topic: 'heads', messages: [message('h', 10)] }], () => limit);
    expect(sends.length).toBeGreaterThan(1);
    for (const send of sends) for (const t of send) expect(t.messages.reduce((n, m) => n + recordSize(m), 0) + 128).toBeLessThanOrEqual(limit);
    expect(sends.flatMap((s) => s.filter((t) => t.topic === 'snapshots').flatMap((t) => t.messages.map((m) => m.key)))).toEqual(messages.map((m) => m.key));
    expect(sends.flatMap((s) => s.filter((t) => t.topic === 'heads'))).toHaveLength(1);
  });

  it('uses each topic its own limit', () => {
    const sends = splitSends([{ topic: 'small', messages: [message('a', 500), message('b', 500)] }], (t) => (t === 'small' ? 800 : 1_000_000));
    expect(sends).toHaveLength(2);
  });

  it('tells a message that can never fit', () => {
    expect(fitsAlone(message('k', 2 * 1024 * 1024), 1_048_588)).toBe(false);
    expect(fitsAlone(message('k', 1_000_000), 1_048_588)).toBe(true);
  });
});
