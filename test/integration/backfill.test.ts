import { afterAll, beforeAll, expect, it } from 'vitest';
import { runBackfill } from '../../src/backfill/backfill.js';
import { createBillingApiClient } from '../../src/billing-api/client.js';
import { LISTABLE_TYPES } from '../../src/billing-api/resource-types.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/wait-for.js';
import { startEnricherHarness, type EnricherHarness } from './enricher-harness.js';

let h: EnricherHarness;
beforeAll(async () => {
  h = await startEnricherHarness();
  // Objects that exist before the loader is pointed at the service: no webhook reaches us.
  h.sim.setWebhookUrl(undefined);
  await h.sim.runScenario({ name: 'default', customers: 6 });
});
afterAll(async () => {
  await h?.stop();
});

const backfill = async () => {
  const api = createBillingApiClient({ ...h.sim.clientOptions(), requestsPerSecond: 40 });
  try {
    return await runBackfill(
      { kafka: createKafka({ brokers: h.config.kafkaBrokers, clientId: 'backfill-test', log: silentLogger }), api, log: silentLogger },
      { topicPrefix: h.config.topicPrefix, types: [...LISTABLE_TYPES], pageSize: 7 },
    );
  } finally {
    await api.close();
  }
};

it('backfill creates version 1 of every existing object, without a source event; a second backfill creates nothing', async () => {
  const existing = LISTABLE_TYPES.flatMap((type) => h.sim.ids(type).filter((id) => h.sim.current(type, id)).map((id) => ({ type, id })));
  expect(existing.length).toBeGreaterThan(20);
  const first = await backfill();
  expect(Object.values(first.objects).reduce((a, b) => a + b, 0)).toBe(existing.length);
  await waitFor(() => existing.every(({ type, id }) => h.versionsOf(type, id).length >= 1), { timeoutMs: 60_000, what: 'every object versioned' });
  for (const { type, id } of existing) {
    const [v1, ...rest] = h.versionsOf(type, id);
    expect(rest, `${type}:${id}`).toEqual([]);
    expect(v1).toMatchObject({ version: 1, deleted: false, source_event_ids: [], sources: [] });
    expect(JSON.parse(v1?.body as string)).toEqual(h.sim.current(type, id));
  }

  await h.flushEnricher();
  const before = h.snapshots.length;
  const second = await backfill();
  expect(Object.values(second.objects).reduce((a, b) => a + b, 0)).toBe(existing.length);
  await h.flushEnricher();
  // Only the flush's own sentinels are new.
  expect(h.snapshots.slice(before).map((v) => v.resource_id).filter((id) => !id.startsWith('sentinel-'))).toEqual([]);
});
