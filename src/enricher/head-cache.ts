import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { decodeHead, type StoredHead } from './head-store.js';

/** How far a partition's cache mirrors its heads partition: every committed record below `offset` is applied. */
export interface HeadCacheMark {
  clusterId: string;
  topic: string;
  partition: number;
  /** The next offset to read from the heads partition. */
  offset: string;
}

/** The local copy of one heads partition. */
export interface PartitionHeadCache {
  get(key: string): StoredHead | undefined;
  /** A record read back from the heads topic (a null value is a tombstone); written in order, visible after flushed(). */
  apply(key: string, value: Buffer | null): void;
  /** Resolves once everything applied so far is visible. */
  flushed(): Promise<void>;
  /**
   * The heads of a transaction that committed; visible when this resolves. With `upTo` (the
   * offset after the transaction's last head record), the mark moves there if it is behind:
   * only for a caller that knows every committed record between the mark and `upTo` is among
   * the heads it put (docs/ARCHITECTURE.md, "Where the heads live").
   */
  putCommitted(records: { key: string; value: Buffer }[], upTo?: string): Promise<void>;
  mark(): HeadCacheMark | undefined;
  /** Records that every committed record below `offset` has been applied (written after those records). */
  setMark(clusterId: string, offset: string): Promise<void>;
  /** Forgets every head and the mark. */
  wipe(): Promise<void>;
}

export interface HeadCache {
  /** The cache of a partition; valid until the next remap of it, so take it anew for each use. */
  partition(partition: number): PartitionHeadCache;
  /**
   * Closes and reopens the files of these partitions once their writes are in. LMDB reads
   * through a memory map, so every page a load touches stays in the process's RSS (page cache,
   * reclaimable, but counted): loading 10,000,000 heads mapped 1.4 GB. Only while nothing else
   * uses those partitions (their catch-up).
   */
  remap(partitions: number[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * LMDB's longest key (its default page size allows 1978 bytes). Resource ids come from webhooks
 * and may be of any length: a longer key is stored under its sha256.
 */
const MAX_KEY_BYTES = 1024;
const MARK = 'mark';

function storeKey(key: string): string {
  return Buffer.byteLength(key) <= MAX_KEY_BYTES ? key : `#sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/**
 * The enricher's heads on disk, one LMDB environment per heads partition under
 * `<dir>/<heads topic>/`: a cache of the compacted heads topic, as Kafka Streams keeps RocksDB
 * beside a changelog topic. It holds only what was read back from the topic or committed in a
 * transaction that succeeded, and its mark moves only for what was read back (docs/ARCHITECTURE.md,
 * "Where the heads live"). Heads are read from disk on demand, so memory does not grow with the
 * number of resources.
 */
export function openHeadCache(dir: string, topic: string): HeadCache {
  const { slotDir: topicDir, release } = takeSlot(join(dir, topic));
  const partitions = new Map<number, { root: RootDatabase; heads: Database<Buffer, string>; meta: Database<HeadCacheMark, string>; view: PartitionHeadCache }>();

  const openPartition = (partition: number) => {
    const path = join(topicDir, `${partition}.mdb`);
    // No fsync per commit (an fsync is milliseconds, per part, and far more while the disk is
    // busy): a process crash loses nothing, the page cache survives it; after a system crash
    // takeSlot has wiped the files (an unsynced LMDB file may then be torn).
    const options = { path, maxDbs: 2, noSync: true };
    let root: RootDatabase;
    try {
      root = open(options);
    } catch {
      // An unreadable file (a disk fault, another LMDB version): the cache is only a copy of the
      // topic, so start it again empty rather than stop the enricher.
      rmSync(path, { force: true });
      rmSync(`${path}-lock`, { force: true });
      root = open(options);
    }
    const heads = root.openDB<Buffer, string>({ name: 'heads', encoding: 'binary' });
    const meta = root.openDB<HeadCacheMark, string>({ name: 'meta', encoding: 'json' });
    const view: PartitionHeadCache = {
      get(key) {
        const value = heads.getBinary(storeKey(key));
        return value === undefined ? undefined : decodeHead(value);
      },
      apply(key, value) {
        if (value === null) void heads.remove(storeKey(key));
        else void heads.put(storeKey(key), value);
      },
      async flushed() {
        await heads.committed;
      },
      async putCommitted(records, upTo) {
        for (const r of records) void heads.put(storeKey(r.key), r.value);
        const m = meta.get(MARK);
        // Queued after the heads, so the mark is never ahead of what the cache holds.
        if (upTo !== undefined && m !== undefined && BigInt(upTo) > BigInt(m.offset)) void meta.put(MARK, { ...m, offset: upTo });
        await heads.committed;
        await meta.committed;
      },
      mark() {
        const m = meta.get(MARK);
        return m === undefined ? undefined : { ...m };
      },
      async setMark(clusterId, offset) {
        await meta.put(MARK, { clusterId, topic, partition, offset });
      },
      async wipe() {
        // The mark goes first: a crash halfway leaves heads without a mark, which the next
        // restore wipes again, never a mark over missing heads.
        await meta.remove(MARK);
        await heads.clearAsync();
      },
    };
    const entry = { root, heads, meta, view };
    partitions.set(partition, entry);
    return entry;
  };

  return {
    partition: (partition) => (partitions.get(partition) ?? openPartition(partition)).view,
    async remap(list) {
      for (const partition of list) {
        const entry = partitions.get(partition);
        if (!entry) continue;
        await entry.heads.committed;
        await entry.meta.committed;
        // Closed before it is opened again: LMDB must not have one file open twice in a process.
        partitions.delete(partition);
        await entry.root.close();
        openPartition(partition);
      }
    },
    async close() {
      const all = [...partitions.values()];
      partitions.clear();
      await Promise.all(all.map((p) => p.root.close()));
      release();
    },
  };
}

/**
 * A directory of its own under `base`: the first slot no live process holds. The cache is kept
 * right only by its one writer (an instance applies records in log order and writes committed
 * heads only while it owns the partition); two processes sharing one, say two enrichers on a
 * host with the default directory, could write an old head over a newer one. A restart takes the
 * first free slot again, usually its own.
 */
function takeSlot(base: string): { slotDir: string; release: () => void } {
  for (let n = 0; ; n++) {
    const slotDir = join(base, `slot-${n}`);
    const lock = join(slotDir, 'owner.pid');
    if (heldHere.has(lock)) continue;
    mkdirSync(slotDir, { recursive: true });
    const holder = `${process.pid} ${bootId()}`;
    try {
      writeFileSync(lock, holder, { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const [pid, boot] = readFileSync(lock, 'utf8').split(' ');
      if (boot === bootId() && heldByAnotherLiveProcess(Number(pid))) continue;
      // Its holder died without releasing it (its pid may even be ours: a container restarted as
      // pid 1). If the system went down since, the files were written without fsync: start empty.
      if (boot !== bootId()) for (const f of readdirSync(slotDir)) if (f.endsWith('.mdb') || f.endsWith('.mdb-lock')) rmSync(join(slotDir, f), { force: true });
      writeFileSync(lock, holder);
    }
    heldHere.add(lock);
    return {
      slotDir,
      release: () => {
        heldHere.delete(lock);
        rmSync(lock, { force: true });
      },
    };
  }
}

/** Slots this process holds (two caches of one process, as in tests, take two slots). */
const heldHere = new Set<string>();

function heldByAnotherLiveProcess(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Changes at every boot of the system (Linux); elsewhere a constant, and a stale slot is wiped only after a reboot is seen. */
function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

/**
 * Where to resume reading a heads partition into its cache, or undefined to wipe the cache and
 * read the partition from its start. The mark must be of this cluster, topic and partition, and
 * inside the log: past the end means the topic was recreated or truncated, before its start
 * means records the cache never saw were deleted.
 */
export function resumeOffset(mark: HeadCacheMark | undefined, where: { clusterId: string; topic: string; partition: number }, log: { low: string; high: string }): string | undefined {
  if (!mark || mark.clusterId !== where.clusterId || mark.topic !== where.topic || mark.partition !== where.partition) return undefined;
  const offset = BigInt(mark.offset);
  if (offset < BigInt(log.low) || offset > BigInt(log.high)) return undefined;
  return mark.offset;
}
