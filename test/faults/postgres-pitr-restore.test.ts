import { appendFileSync, chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Admin } from 'kafkajs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeadLetterEncoder } from '../../src/kafka/dead-letters.js';
import { postgresService } from '../../src/stack/postgres-service.js';
import type { StackService } from '../../src/stack/service.js';
import { deadLetterFor } from '../../src/wire/dead-letter.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { runCli } from '../helpers/cli.js';
import { testConfig } from '../helpers/environment.js';
import { freePort } from '../helpers/free-port.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, webhook, type SinkHarness } from '../integration/sink-harness.js';

/**
 * Backup and restore (docs/OPERATIONS.md): a private PostgreSQL with a WAL archive, a base
 * backup taken after the first round of history, a named restore point after the second, a
 * third round, then a point-in-time restore to the restore point. The restored warehouse lacks
 * the third round while the sink's committed offsets are past it; `billing-loader repair
 * sink-offsets` moves the sink back to what the warehouse holds, and the sink writes exactly the
 * gap again: the warehouse then equals, row for row, the one before the restore.
 *
 * The native stack's PostgreSQL binaries have no pg_basebackup, so the base backup is taken
 * with the server's own low-level API (pg_backup_start, a copy of the data folder,
 * pg_backup_stop), which is what pg_basebackup does over a replication connection.
 */
const RESTORE_POINT = 'before-round-3';
const perRound = 120;
const webhooksPerRound = 10;

// As root, PostgreSQL runs as nobody (src/stack/postgres-service.ts): what it reads and writes must be nobody's.
const nobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
const giveToServer = (path: string) => {
  if (!nobody) return;
  chownSync(path, nobody.uid, nobody.gid);
  if (lstatSync(path).isDirectory()) for (const e of readdirSync(path)) giveToServer(join(path, e));
};

/** Copies a live data folder, skipping what a base backup leaves out (pid file, WAL, socket); a file the server removes meanwhile is skipped too. */
function copyDataFolder(from: string, to: string, root = from): void {
  mkdirSync(to, { recursive: true, mode: 0o700 });
  for (const name of readdirSync(from)) {
    const source = join(from, name);
    const rel = relative(root, source);
    if (['postmaster.pid', 'postmaster.opts', 'backup_label.old'].includes(rel)) continue;
    try {
      const stat = lstatSync(source);
      if (stat.isDirectory()) {
        // WAL comes from the archive; the folders must exist.
        if (rel === 'pg_wal') {
          mkdirSync(join(to, 'pg_wal', 'archive_status'), { recursive: true });
          continue;
        }
        copyDataFolder(source, join(to, name), root);
      } else if (stat.isSymbolicLink()) symlinkSync(readlinkSync(source), join(to, name));
      // The server's socket and its lock file live in the data folder here (unix_socket_directories).
      else if (stat.isFile() && !name.startsWith('.s.PGSQL.')) copyFileSync(source, join(to, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

let dir: string;
let server: StackService;
let address: string;
let h: SinkHarness;
let admin: Admin;
let env: Record<string, string>;
const archive = () => join(dir, 'archive');
const data = () => join(dir, 'postgres', 'data');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pitr-postgres-'));
  chmodSync(dir, 0o755);
  mkdirSync(archive());
  giveToServer(archive());
  const port = await freePort();
  server = postgresService(dir, port);
  await server.install(() => undefined);
  appendFileSync(join(data(), 'postgresql.conf'), `\nwal_level = replica\narchive_mode = on\narchive_command = 'cp %p ${archive()}/%f'\n`);
  await server.start();
  await server.waitReady(90_000);
  address = `postgres://postgres@127.0.0.1:${port}/postgres`;
  h = await createSinkHarness(testConfig({ DATABASE_URL: address }));
  admin = h.kafka.admin();
  await admin.connect();
  env = {
    KAFKA_BROKERS: h.config.kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: h.config.schemaRegistryUrl,
    DATABASE_URL: address,
    DATABASE_SCHEMA: h.config.databaseSchema,
    TOPIC_PREFIX: h.config.topicPrefix,
    LOG_LEVEL: 'warn',
  };
});
afterAll(async () => {
  await admin?.disconnect();
  await h?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One round of history: version `round` of every invoice, webhooks, and one letter the enricher gave up. */
async function produceRound(round: number): Promise<void> {
  await h.produceSnapshots(Array.from({ length: perRound }, (_, i) => snapshot('Invoice', `inv-${i}`, round, { Id: `inv-${i}`, round })));
  await h.produceWebhooks(Array.from({ length: webhooksPerRound }, (_, i) => webhook('InvoiceChanged', { InvoiceId: `inv-${i}`, round })));
  const requests = enricherTopics(h.config.topicPrefix).requests;
  const letter = deadLetterFor(h.names.webhooksDlq, requests, 0, { offset: String(round), key: Buffer.from(`Invoice:inv-${round}`), value: Buffer.from(`{"round":${round}}`) }, 'not-found', `round ${round}`);
  const producer = h.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    for (const { topic, messages } of createDeadLetterEncoder('enricher', () => 1_048_576)([letter])) await producer.send({ topic, acks: -1, messages });
  } finally {
    await producer.disconnect();
  }
}

const TABLES = {
  resource_versions: 'resource_type, resource_id, version',
  webhook_events: 'event_id',
  dead_letters: 'dlq_topic, dlq_partition, dlq_offset',
} as const;

async function counts(): Promise<Record<keyof typeof TABLES, number>> {
  const n = (t: string) => h.count(`SELECT count(*) n FROM ${h.table(t)}`);
  return { resource_versions: await n('resource_versions'), webhook_events: await n('webhook_events'), dead_letters: await n('dead_letters') };
}

const loaded = (rounds: number) => ({ resource_versions: rounds * perRound, webhook_events: rounds * webhooksPerRound, dead_letters: rounds });

/** Every row of the three tables, all columns but loaded_at (when a row landed describes the load, not the history), in key order. */
async function warehouseRows(): Promise<Record<string, unknown[]>> {
  const result: Record<string, unknown[]> = {};
  for (const [table, key] of Object.entries(TABLES)) {
    const { rows } = await h.pool.query(`SELECT * FROM ${h.table(table)} ORDER BY ${key}`);
    result[table] = rows.map(({ loaded_at: _loadedAt, ...rest }: Record<string, unknown>) => rest);
  }
  return result;
}

async function committedTotal(groupId: string, topics: string[]): Promise<number> {
  let total = 0;
  for (const t of await admin.fetchOffsets({ groupId, topics })) for (const p of t.partitions) total += Math.max(0, Number(p.offset));
  return total;
}

describe('backup and restore: PostgreSQL restored to a point in time', () => {
  it('repair sink-offsets moves the sink back to what the restored warehouse holds, and the sink refills exactly the gap', async () => {
    const groupId = `${h.config.topicPrefix}.sink`;
    const dlqGroup = `${groupId}.dead-letters`;
    const sink = await h.startSink();
    await produceRound(1);
    await waitFor(async () => JSON.stringify(await counts()) === JSON.stringify(loaded(1)), { what: 'round 1 loaded', timeoutMs: 60_000 });

    // The base backup, taken while the server runs.
    const backup = join(dir, 'base');
    const client = new pg.Client({ connectionString: address });
    await client.connect();
    try {
      await client.query(`SELECT pg_backup_start('pitr-test', true)`);
      copyDataFolder(data(), backup);
      const { rows } = await client.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(true)');
      writeFileSync(join(backup, 'backup_label'), rows[0]?.labelfile ?? '');
    } finally {
      await client.end();
    }

    await produceRound(2);
    await waitFor(async () => JSON.stringify(await counts()) === JSON.stringify(loaded(2)), { what: 'round 2 loaded', timeoutMs: 60_000 });
    await h.pool.query(`SELECT pg_create_restore_point($1)`, [RESTORE_POINT]);
    await produceRound(3);
    await waitFor(async () => JSON.stringify(await counts()) === JSON.stringify(loaded(3)), { what: 'round 3 loaded', timeoutMs: 60_000 });

    const refused = await runCli(['repair', 'sink-offsets'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^billing-loader: consumer group '.*\.sink' has 1 active member\(s\) .*; stop the sink first, then run repair sink-offsets again$/)]);

    await sink.stop();
    const before = await warehouseRows();
    expect(await committedTotal(groupId, [h.names.snapshots])).toBe(3 * perRound);
    expect(await committedTotal(groupId, [h.names.webhooks])).toBe(3 * webhooksPerRound);

    // Everything up to now in the archive, then the server gone.
    const { rows: switched } = await h.pool.query<{ wal: string }>('SELECT pg_walfile_name(pg_switch_wal()) AS wal');
    const lastWal = switched[0]?.wal as string;
    await waitFor(() => existsSync(join(archive(), lastWal)), { what: `${lastWal} archived`, timeoutMs: 60_000 });
    await server.stop();

    // The restore: the base backup, the archive's WAL replayed up to the restore point, then promoted.
    renameSync(data(), `${data()}.lost`);
    copyDataFolder(backup, data());
    appendFileSync(
      join(data(), 'postgresql.conf'),
      `\narchive_mode = off\nrestore_command = 'cp ${archive()}/%f %p'\nrecovery_target_name = '${RESTORE_POINT}'\nrecovery_target_action = 'promote'\n`,
    );
    writeFileSync(join(data(), 'recovery.signal'), '');
    giveToServer(data());
    chmodSync(data(), 0o700);
    await server.start();
    await server.waitReady(90_000);
    await waitFor(async () => (await h.pool.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows[0]?.r === false, { what: 'recovery done', timeoutMs: 60_000 });

    // The restored warehouse lacks round 3, while the sink's offsets are past it: without a rewind the gap stays.
    expect(await counts()).toEqual(loaded(2));

    const dry = await runCli(['repair', 'sink-offsets', '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);
    const gap = perRound + webhooksPerRound + 1;
    expect(dry.stderr).toMatch(new RegExp(`would move \\d+ of \\d+ partition\\(s\\) back, ${gap} record\\(s\\) to read again \\(dry run: nothing changed\\)`));
    expect(dry.stdout).toMatch(new RegExp(`^${groupId.replace(/\./g, '\\.')} ${h.names.snapshots.replace(/\./g, '\\.')} \\d+ \\d+ -> \\d+$`, 'm'));
    expect(await committedTotal(groupId, [h.names.snapshots])).toBe(3 * perRound);

    const real = await runCli(['repair', 'sink-offsets'], env);
    expect(real.code, real.stderr).toBe(0);
    expect(real.stderr).toMatch(new RegExp(`moved \\d+ of \\d+ partition\\(s\\) back, ${gap} record\\(s\\) to read again`));
    expect(await committedTotal(groupId, [h.names.snapshots])).toBe(2 * perRound);
    expect(await committedTotal(groupId, [h.names.webhooks])).toBe(2 * webhooksPerRound);
    expect(await committedTotal(dlqGroup, [h.names.webhooksDlq])).toBe(2);

    const again = await h.startSink();
    await waitFor(async () => JSON.stringify(await counts()) === JSON.stringify(loaded(3)), { what: 'the gap written again', timeoutMs: 90_000 });
    await waitFor(async () => (await committedTotal(groupId, [h.names.snapshots])) === 3 * perRound, { what: 'sink caught up' });
    await again.stop();
    expect(await warehouseRows()).toEqual(before);

    // Run again on a warehouse that holds everything: nothing moves.
    const noop = await runCli(['repair', 'sink-offsets'], env);
    expect(noop.code, noop.stderr).toBe(0);
    expect(noop.stderr).toMatch(/moved 0 of \d+ partition\(s\) back, 0 record\(s\) to read again/);
  });
});
