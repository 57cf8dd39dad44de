import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openHeadCache } from '../../src/enricher/head-cache.js';
import { encodeHead } from '../../src/enricher/head-store.js';
import { createKafka } from '../../src/kafka/client.js';
import { createLogger } from '../../src/log.js';
import { enricherTopics, PIPELINE_PARTITIONS } from '../../src/wire/topics.js';
import type { Signup } from '../../src/simulator/billing-operations.js';
import { waitFor } from '../helpers/wait-for.js';
import { expectExactVersions } from './enricher-expectations.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

let h: EnricherHarness;
let signups: Signup[];
const otherDirs: string[] = [];
beforeAll(async () => {
  h = await startEnricherHarness();
  signups = Array.from({ length: 6 }, () => h.sim.billing.signup({ trial: false }));
  await waitFor(() => signups.every((s) => h.versionsOf('Contract', s.contractId).length === 1 && h.versionsOf('Customer', s.customerId).length === 1), { what: 'first versions' });
});
afterAll(async () => {
  await h?.stop();
  for (const dir of otherDirs) rmSync(dir, { recursive: true, force: true });
});

/** Head records read at restore so far, summed over every instance, by mode. */
async function restored(): Promise<{ full: number; resumed: number }> {
  const text = await h.metricsText();
  const sum = (mode: string) => [...text.matchAll(new RegExp(`^billing_loader_enricher_heads_restored_total\\{mode="${mode}"\\} (\\d+)`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  return { full: sum('full'), resumed: sum('resumed') };
}

/** Every contract changes once; its new version must be the next number, and customers (unchanged, notified again) get none. */
async function changeAllAndCheck(round: number): Promise<void> {
  const before = new Map(signups.map((s) => [s.contractId, h.versionsOf('Contract', s.contractId).length]));
  for (const s of signups) {
    h.sim.billing.changePlan(s.contractId, round % 3);
    h.sim.emit({ Event: 'CustomerChanged', CustomerId: s.customerId });
  }
  await waitFor(() => signups.every((s) => h.versionsOf('Contract', s.contractId).length > (before.get(s.contractId) ?? 0)), { what: `round ${round} versions` });
  await h.flushEnricher();
  for (const s of signups) {
    expectExactVersions(h, 'Contract', s.contractId);
    expectExactVersions(h, 'Customer', s.customerId);
    expect(h.versionsOf('Contract', s.contractId)).toHaveLength((before.get(s.contractId) ?? 0) + 1);
    expect(h.versionsOf('Customer', s.customerId)).toHaveLength(1);
  }
}

const newDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'enricher-state-'));
  otherDirs.push(dir);
  return dir;
};

/** Heads written in the topic so far: one per resource versioned (sentinels included). */
const headsInTopic = () => new Set(h.snapshots.map((s) => `${s.resource_type}:${s.resource_id}`)).size;

it('after a restart with its state directory, restores heads without reading the heads topic again, and versions exactly', async () => {
  await h.flushEnricher();
  const heads = headsInTopic();
  const before = await restored();
  await h.restartEnricher();
  await changeAllAndCheck(1);
  const after = await restored();
  expect(after.full - before.full).toBe(0);
  // Only what was written after the cache's mark is read again: nothing, here.
  expect(after.resumed - before.resumed).toBeLessThan(heads);
});

it('with a foreign state directory, restores every head and versions exactly', async () => {
  // Caches of the same topic name holding wrong heads for our resources: on half the partitions
  // from another cluster, on the others with a mark past the topic's end (a recreated topic).
  const topic = enricherTopics(h.config.topicPrefix).heads;
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'heads-store-test', log: createLogger('warn') });
  const admin = kafka.admin();
  await admin.connect();
  const { clusterId } = await admin.describeCluster();
  await admin.disconnect();
  const dir = newDir();
  const cache = openHeadCache(dir, topic);
  for (let p = 0; p < PIPELINE_PARTITIONS; p++) {
    for (const s of signups) cache.partition(p).apply(`Contract:${s.contractId}`, encodeHead({ version: 99, contentHash: 'wrong', deleted: false, fetchedAt: 1 }));
    await cache.partition(p).setMark(p % 2 === 0 ? 'another-cluster' : clusterId, p % 2 === 0 ? '0' : '1000000000');
  }
  await cache.close();
  await h.flushEnricher();
  const heads = headsInTopic();
  const before = await restored();
  await h.restartEnricher({ stateDir: dir });
  await changeAllAndCheck(2);
  expect((await restored()).full - before.full).toBeGreaterThanOrEqual(heads);
});

it('an empty state directory restores every head; a cache left behind meanwhile is caught up from its mark', async () => {
  const stale = h.stateDir;
  await h.flushEnricher();
  const heads = headsInTopic();
  // Another instance, with an empty cache, takes over and writes new heads.
  let before = await restored();
  await h.restartEnricher({ stateDir: newDir() });
  await changeAllAndCheck(3);
  let after = await restored();
  expect(after.full - before.full).toBeGreaterThanOrEqual(heads);
  // The first cache, behind by those heads, comes back.
  before = after;
  await h.restartEnricher({ stateDir: stale });
  await changeAllAndCheck(4);
  after = await restored();
  expect(after.full - before.full).toBe(0);
  // The other instance's heads (one per contract at least) were read from the stale cache's mark on.
  expect(after.resumed - before.resumed).toBeGreaterThanOrEqual(signups.length);
});
