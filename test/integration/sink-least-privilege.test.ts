import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import { createHealth } from '../../src/health.js';
import type { Running } from '../../src/lifecycle.js';
import { createMetrics } from '../../src/metrics.js';
import { startSink } from '../../src/sink/sink.js';
import { WRITER_ROLE } from '../../src/warehouse/resource-types.js';
import { testConfig, uniqueSuffix } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, webhook, type SinkHarness } from './sink-harness.js';

/**
 * The sink runs as a login holding billing_loader_writer and nothing else (docs/OPERATIONS.md);
 * the warehouse belongs to the login that ran `migrate`. The sink then works, and the owner-only
 * ways around the append-only fences are closed to it.
 */
const login = `test_sink_${uniqueSuffix()}`;
let h: SinkHarness;
let sink: Running | undefined;
let writer: ReturnType<typeof createPool>;

beforeAll(async () => {
  h = await createSinkHarness(testConfig());
  await h.pool.query(`CREATE ROLE ${login} LOGIN IN ROLE ${WRITER_ROLE}`);
  const url = new URL(h.config.databaseUrl);
  url.username = login;
  url.password = '';
  const config = { ...h.config, databaseUrl: url.toString() };
  writer = createPool({ databaseUrl: config.databaseUrl, applicationName: 'test-writer', log: h.log, max: 1 });
  sink = await startSink({ log: h.log, metrics: createMetrics(), health: createHealth() }, config);
});

afterAll(async () => {
  await sink?.stop();
  await writer?.end();
  await h?.close();
  await h?.pool.query(`DROP ROLE IF EXISTS ${login}`).catch(() => undefined);
});

/** The SQLSTATE a statement run as the writer login fails with. */
async function refusal(sql: string): Promise<string | undefined> {
  try {
    await writer.query(sql);
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

describe('sink with a billing_loader_writer login that does not own the warehouse', () => {
  it('is a login of its own, not the owner, and not a superuser', async () => {
    const { rows } = await writer.query(
      `SELECT current_user AS who, r.rolsuper AS super, pg_has_role(current_user, '${WRITER_ROLE}', 'MEMBER') AS writer,
              (SELECT tableowner FROM pg_tables WHERE schemaname = $1 AND tablename = 'resource_versions') AS owner
         FROM pg_roles r WHERE r.rolname = current_user`,
      [h.schema],
    );
    expect(rows).toEqual([{ who: login, super: false, writer: true, owner: expect.not.stringMatching(new RegExp(`^${login}$`)) }]);
  });

  it('appends versions and webhooks', async () => {
    await h.produceSnapshots([snapshot('Contract', 'ct-1', 1, { Id: 'ct-1', CustomerId: 'cu-1' }), snapshot('Contract', 'ct-1', 2, { Id: 'ct-1', CustomerId: 'cu-1', Plan: 'pro' })]);
    await h.produceWebhooks([webhook('ContractChanged', { ContractId: 'ct-1' })]);
    await waitFor(
      async () => (await h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`)) === 2 && (await h.count(`SELECT count(*) n FROM ${h.table('webhook_events')}`)) === 1,
      { what: 'versions and the webhook written by the writer login' },
    );
  });

  it('cannot disable the append-only triggers (42501: must be the owner)', async () => {
    expect(await refusal(`ALTER TABLE ${h.table('resource_versions')} DISABLE TRIGGER resource_versions_append_only`)).toBe('42501');
    expect(await refusal(`ALTER TABLE ${h.table('webhook_events')} DISABLE TRIGGER ALL`)).toBe('42501');
  });

  it('cannot switch the triggers off for its session either (42501: session_replication_role)', async () => {
    expect(await refusal(`SET session_replication_role = replica`)).toBe('42501');
  });

  it('cannot DELETE (42501)', async () => {
    expect(await refusal(`DELETE FROM ${h.table('resource_versions')}`)).toBe('42501');
    expect(await refusal(`DELETE FROM ${h.table('webhook_events')}`)).toBe('42501');
  });

  it('cannot TRUNCATE (42501)', async () => {
    expect(await refusal(`TRUNCATE ${h.table('resource_versions')}`)).toBe('42501');
    expect(await refusal(`TRUNCATE ${h.table('webhook_events')}`)).toBe('42501');
  });

  it('cannot UPDATE (42501)', async () => {
    expect(await refusal(`UPDATE ${h.table('resource_versions')} SET content_hash = 'x'`)).toBe('42501');
  });
});
