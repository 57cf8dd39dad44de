import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, metricValue, readDeadLetters, snapshot, type SinkHarness } from './sink-harness.js';

let h: SinkHarness;
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  await h?.close();
});

describe('sink: the version guard (docs/CONTRACT.md property 3)', () => {
  it('skips replayed versions, refuses identical consecutive content and conflicting versions, writes and reports gaps', async () => {
    await h.produceSnapshots([
      snapshot('Order', 'dup', 1, { n: 1 }),
      snapshot('Order', 'dup', 1, { n: 1 }), // the same record twice: a no-op
      snapshot('Order', 'same', 1, { n: 1 }),
      snapshot('Order', 'same', 2, { n: 1 }), // same content as version 1: never a second row
      snapshot('Order', 'gap', 1, { n: 1 }),
      snapshot('Order', 'gap', 3, { n: 3 }), // version 2 missing upstream: written, reported
      snapshot('Order', 'conflict', 1, { n: 1 }),
      snapshot('Order', 'conflict', 1, { n: 'other' }), // two different version 1: the first stays
    ]);
    const sink = await h.startSink();
    await waitFor(async () => (await metricValue(sink.metrics, 'billing_loader_sink_dead_letters_total')) === 2, { what: 'two refusals' });
    await waitFor(async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 5, { what: 'rows' });

    const { rows } = await h.pool.query(`SELECT resource_id, version, body FROM ${h.table('resource_versions')} ORDER BY resource_id, version`);
    expect(rows).toEqual([
      { resource_id: 'conflict', version: 1, body: { n: 1 } },
      { resource_id: 'dup', version: 1, body: { n: 1 } },
      { resource_id: 'gap', version: 1, body: { n: 1 } },
      { resource_id: 'gap', version: 3, body: { n: 3 } },
      { resource_id: 'same', version: 1, body: { n: 1 } },
    ]);
    expect(await metricValue(sink.metrics, 'billing_loader_sink_version_gaps_total', { resource_type: 'Order' })).toBe(1);
    expect(await metricValue(sink.metrics, 'billing_loader_sink_already_stored_total')).toBe(1);

    const letters = await readDeadLetters(h, h.names.snapshotsDlq, 2);
    expect(letters.map((l) => [l.errorClass, l.key?.toString(), l.stage, l.sourceTopic]).sort()).toEqual([
      ['duplicate-content', 'Order:same', 'sink', h.names.snapshots],
      ['version-conflict', 'Order:conflict', 'sink', h.names.snapshots],
    ]);
    await sink.stop();
  });

  it('replaying the whole log through a fresh consumer group writes nothing new', async () => {
    const before = await h.pool.query(`SELECT * FROM ${h.table('resource_versions')} ORDER BY 1, 2, 3`);
    const replay = await h.startSink({ groupId: `${h.config.topicPrefix}.replay` });
    // 8 records: 5 stored, 1 already-stored duplicate, 2 refused again.
    await waitFor(async () => (await metricValue(replay.metrics, 'billing_loader_sink_already_stored_total')) === 6, { what: 'replay seen' });
    await waitFor(async () => (await metricValue(replay.metrics, 'billing_loader_sink_dead_letters_total')) === 2, { what: 'refusals repeated' });
    expect(await metricValue(replay.metrics, 'billing_loader_sink_rows_written_total')).toBe(0);
    const after = await h.pool.query(`SELECT * FROM ${h.table('resource_versions')} ORDER BY 1, 2, 3`);
    expect(after.rows).toEqual(before.rows);
    await replay.stop();
  });
});
