import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openHeadCache, resumeOffset, type HeadCache } from './head-cache.js';
import { encodeHead, type StoredHead } from './head-store.js';

const head = (version: number, extra: Partial<StoredHead> = {}): StoredHead => ({ version, contentHash: `h${version}`, deleted: false, fetchedAt: 1000 + version, ...extra });

describe('head cache', () => {
  let dir: string;
  let cache: HeadCache;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'head-cache-'));
    cache = openHeadCache(dir, 't.enricher.heads');
  });
  afterEach(async () => {
    await cache.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts empty, with no mark', () => {
    const p = cache.partition(0);
    expect(p.mark()).toBeUndefined();
    expect(p.get('Contract:c1')).toBeUndefined();
  });

  it('applies records read from the topic: the latest wins, a tombstone deletes', async () => {
    const p = cache.partition(0);
    p.apply('Contract:c1', encodeHead(head(1)));
    p.apply('Contract:c1', encodeHead(head(2, { customerId: 'k1', escalationProcessIds: ['e1'] })));
    p.apply('Contract:c2', encodeHead(head(1)));
    p.apply('Contract:c2', null);
    await p.flushed();
    expect(p.get('Contract:c1')).toEqual(head(2, { customerId: 'k1', escalationProcessIds: ['e1'] }));
    expect(p.get('Contract:c2')).toBeUndefined();
  });

  it('keeps heads and the mark across a close and a reopen', async () => {
    const p = cache.partition(3);
    p.apply('Invoice:i1', encodeHead(head(4)));
    await p.setMark('cluster-a', '17');
    await cache.close();
    cache = openHeadCache(dir, 't.enricher.heads');
    const again = cache.partition(3);
    expect(again.get('Invoice:i1')).toEqual(head(4));
    expect(again.mark()).toEqual({ clusterId: 'cluster-a', topic: 't.enricher.heads', partition: 3, offset: '17' });
  });

  it('makes committed heads visible once their write resolves, without moving the mark', async () => {
    const p = cache.partition(1);
    await p.setMark('cluster-a', '5');
    await p.putCommitted([{ key: 'Order:o1', value: encodeHead(head(2)) }]);
    expect(p.get('Order:o1')).toEqual(head(2));
    expect(p.mark()?.offset).toBe('5');
  });

  it('moves the mark with committed heads only forward, and only once there is a mark', async () => {
    const p = cache.partition(1);
    await p.putCommitted([{ key: 'Order:o1', value: encodeHead(head(1)) }], '3');
    expect(p.mark()).toBeUndefined();
    await p.setMark('cluster-a', '5');
    await p.putCommitted([{ key: 'Order:o1', value: encodeHead(head(2)) }], '9');
    expect(p.mark()?.offset).toBe('9');
    await p.putCommitted([{ key: 'Order:o2', value: encodeHead(head(1)) }], '7');
    expect(p.mark()).toEqual({ clusterId: 'cluster-a', topic: 't.enricher.heads', partition: 1, offset: '9' });
  });

  it('wipes a partition: heads and mark', async () => {
    const p = cache.partition(2);
    p.apply('Order:o1', encodeHead(head(1)));
    await p.setMark('cluster-a', '9');
    await p.wipe();
    expect(p.get('Order:o1')).toBeUndefined();
    expect(p.mark()).toBeUndefined();
  });

  it('keeps partitions and topics apart', async () => {
    cache.partition(0).apply('Order:o1', encodeHead(head(1)));
    await cache.partition(0).setMark('cluster-a', '1');
    expect(cache.partition(1).get('Order:o1')).toBeUndefined();
    expect(cache.partition(1).mark()).toBeUndefined();
    const other = openHeadCache(dir, 'other.enricher.heads');
    try {
      expect(other.partition(0).get('Order:o1')).toBeUndefined();
      expect(other.partition(0).mark()).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('stores a resource whose key is longer than the store accepts as a key', async () => {
    const p = cache.partition(0);
    const long = `Contract:${'x'.repeat(5000)}`;
    const longer = `Contract:${'x'.repeat(5001)}`;
    p.apply(long, encodeHead(head(3)));
    await p.flushed();
    expect(p.get(long)).toEqual(head(3));
    expect(p.get(longer)).toBeUndefined();
  });
});

describe('resumeOffset', () => {
  const where = { clusterId: 'c', topic: 't', partition: 0 };
  const mark = (offset: string, over: Partial<typeof where> = {}) => ({ ...where, ...over, offset });

  it('resumes from the mark when it is of this cluster, topic and partition and inside the log', () => {
    expect(resumeOffset(mark('10'), where, { low: '0', high: '20' })).toBe('10');
    expect(resumeOffset(mark('20'), where, { low: '0', high: '20' })).toBe('20');
    expect(resumeOffset(mark('5'), where, { low: '5', high: '20' })).toBe('5');
  });

  it('starts over without a mark, for another cluster or topic, or a mark outside the log', () => {
    expect(resumeOffset(undefined, where, { low: '0', high: '20' })).toBeUndefined();
    expect(resumeOffset(mark('10', { clusterId: 'other' }), where, { low: '0', high: '20' })).toBeUndefined();
    expect(resumeOffset(mark('10', { topic: 'other' }), where, { low: '0', high: '20' })).toBeUndefined();
    expect(resumeOffset(mark('10', { partition: 1 }), where, { low: '0', high: '20' })).toBeUndefined();
    // The topic was recreated (or truncated): the mark is past its end.
    expect(resumeOffset(mark('21'), where, { low: '0', high: '20' })).toBeUndefined();
    // Records before the log's start were deleted: what they held is unknown.
    expect(resumeOffset(mark('4'), where, { low: '5', high: '20' })).toBeUndefined();
  });
});

describe('head cache directory', () => {
  it('gives two open caches of one topic their own slots, and a released slot to the next', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'head-cache-'));
    try {
      const a = openHeadCache(dir, 't.enricher.heads');
      a.partition(0).apply('Order:o1', encodeHead(head(1)));
      await a.partition(0).setMark('c', '1');
      const b = openHeadCache(dir, 't.enricher.heads');
      expect(b.partition(0).mark()).toBeUndefined();
      await b.close();
      await a.close();
      const again = openHeadCache(dir, 't.enricher.heads');
      expect(again.partition(0).get('Order:o1')).toEqual(head(1));
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('head cache after a crash', () => {
  it('keeps a dead holder\'s slot after a process crash, and starts it empty after a system restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'head-cache-'));
    try {
      const a = openHeadCache(dir, 't.enricher.heads');
      a.partition(0).apply('Order:o1', encodeHead(head(1)));
      await a.partition(0).setMark('c', '1');
      await a.close();
      const lock = join(dir, 't.enricher.heads', 'slot-0', 'owner.pid');
      const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
      // A holder that died without releasing the slot, in this boot: its files are intact.
      writeFileSync(lock, `999999999 ${bootId}`);
      const b = openHeadCache(dir, 't.enricher.heads');
      expect(b.partition(0).get('Order:o1')).toEqual(head(1));
      await b.close();
      // One that died before the system restarted: its unsynced files are not trusted.
      writeFileSync(lock, '999999999 another-boot');
      const c = openHeadCache(dir, 't.enricher.heads');
      expect(c.partition(0).get('Order:o1')).toBeUndefined();
      expect(c.partition(0).mark()).toBeUndefined();
      await c.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('head cache remap', () => {
  it('keeps heads and mark across a remap, and gives a working cache after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'head-cache-'));
    const cache = openHeadCache(dir, 't.enricher.heads');
    try {
      cache.partition(0).apply('Order:o1', encodeHead(head(1)));
      await cache.partition(0).setMark('c', '4');
      cache.partition(0).apply('Order:o2', encodeHead(head(2)));
      await cache.remap([0, 1]);
      expect(cache.partition(0).get('Order:o1')).toEqual(head(1));
      expect(cache.partition(0).get('Order:o2')).toEqual(head(2));
      expect(cache.partition(0).mark()?.offset).toBe('4');
      await cache.partition(0).putCommitted([{ key: 'Order:o3', value: encodeHead(head(3)) }], '6');
      expect(cache.partition(0).get('Order:o3')).toEqual(head(3));
      expect(cache.partition(0).mark()?.offset).toBe('6');
    } finally {
      await cache.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
