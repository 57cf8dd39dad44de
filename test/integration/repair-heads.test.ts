import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { enricherTopics } from '../../src/wire/topics.js';
import { runCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

/**
 * The heads topic lost (deleted by a cleanup script, say) on a host whose head cache is gone too:
 * `billing-loader repair heads` rebuilds it from the snapshot log, and the next change of a
 * resource gets the version after its latest, not version 1 (which the sink would refuse as a
 * version conflict).
 */
let h: EnricherHarness;
const freshDir = mkdtempSync(join(tmpdir(), 'enricher-state-after-'));
beforeAll(async () => {
  h = await startEnricherHarness();
});
afterAll(async () => {
  await h?.stop();
  rmSync(freshDir, { recursive: true, force: true });
});

it('rebuilds the heads from the snapshot log: after the topic is deleted, versions go on from the latest', { timeout: 180_000 }, async () => {
  const env = { KAFKA_BROKERS: h.config.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: h.config.schemaRegistryUrl, TOPIC_PREFIX: h.config.topicPrefix, LOG_LEVEL: 'warn' };
  const s = h.sim.billing.signup({ trial: false });
  await waitFor(() => h.versionsOf('Contract', s.contractId).length === 1, { what: 'v1' });
  h.sim.billing.changePlan(s.contractId, 1);
  await waitFor(() => h.versionsOf('Contract', s.contractId).length === 2, { what: 'v2' });

  const refused = await runCli(['repair', 'heads'], env);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/active members; stop the enricher first/);

  await h.stopEnrichers();
  const heads = enricherTopics(h.config.topicPrefix).heads;
  const kafka = createKafka({ brokers: h.config.kafkaBrokers, clientId: 'repair-heads-test', log: silentLogger });
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [heads], timeout: 30_000 });
  await waitFor(async () => !(await admin.listTopics()).includes(heads), { what: 'heads topic deleted' });

  const dry = await runCli(['repair', 'heads', '--dry-run'], env);
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toMatch(/would write [1-9]\d* head\(s\), 0 already current/);
  expect((await admin.listTopics()).includes(heads)).toBe(false);

  const repaired = await runCli(['repair', 'heads'], env);
  expect(repaired.code, repaired.stderr).toBe(0);
  expect(repaired.stdout).toMatch(/wrote [1-9]\d* head\(s\), 0 already current/);
  const again = await runCli(['repair', 'heads'], env);
  expect(again.stdout).toMatch(/wrote 0 head\(s\), [1-9]\d* already current/);
  await admin.disconnect();

  // A new host: the enricher restores its heads from the topic alone.
  await h.restartEnricher({ stateDir: freshDir });
  h.sim.billing.changePlan(s.contractId, 2);
  await waitFor(() => h.versionsOf('Contract', s.contractId).length === 3, { what: 'v3' });
  expect(h.versionsOf('Contract', s.contractId).map((v) => v.version)).toEqual([1, 2, 3]);
});
