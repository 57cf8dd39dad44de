import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.js';
import { testConfig } from '../helpers/environment.js';
import { waitFor } from '../helpers/wait-for.js';
import { createSinkHarness, snapshot, type SinkHarness } from './sink-harness.js';
import { freePort } from '../helpers/free-port.js';

/**
 * kill -9 of the sink process while it writes, then a restart: every version lands exactly once
 * (docs/CONTRACT.md property 6). Runs the built CLI (`npm run build`; `npm test` builds first).
 */
let h: SinkHarness;
const children: ChildProcess[] = [];
let sinkOutput = '';
beforeAll(async () => {
  h = await createSinkHarness(testConfig());
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await h?.close();
});

async function spawnSink(): Promise<{ child: ChildProcess; port: number }> {
  const c = h.config;
  const port = await freePort();
  const child = spawn(process.execPath, [join(packageRoot, 'bin', 'billing-loader.js'), 'sink'], {
    cwd: packageRoot,
    env: {
      ...process.env,
      KAFKA_BROKERS: c.kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: c.schemaRegistryUrl,
      DATABASE_URL: c.databaseUrl,
      DATABASE_SCHEMA: c.databaseSchema,
      TOPIC_PREFIX: c.topicPrefix,
      SINK_PORT: String(port),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // Kept for the failure message: a sink that exits by itself shows why.
  child.stderr?.on('data', (d: Buffer) => (sinkOutput += d.toString()));
  children.push(child);
  return { child, port };
}

describe('sink: SIGKILL mid-batch and restart', () => {
  it('leaves no gap and no duplicate', async () => {
    const resources = 400;
    const versions = 25;
    const body = (i: number, v: number) => ({ Id: `r-${i}`, version: v, filler: 'x'.repeat(1500) });
    // Versions interleaved across resources, as the enricher would publish them over time.
    for (let v = 1; v <= versions; v++) {
      await h.produceSnapshots(Array.from({ length: resources }, (_, i) => snapshot('Customer', `r-${i}`, v, body(i, v))));
    }
    const total = resources * versions;
    const rows = () => h.count(`SELECT count(*) n FROM ${h.table('resource_versions')}`);

    const { child: first } = await spawnSink();
    const seen = await waitFor(async () => {
      const n = await rows();
      return n > 0 ? n : 0;
    }, { what: 'first rows written', timeoutMs: 60_000, intervalMs: 5 });
    first.kill('SIGKILL');
    await once(first, 'exit');
    const atKill = await rows();
    expect(seen).toBeLessThan(total); // the sink was killed before it had everything

    const { child: second, port } = await spawnSink();
    await waitFor(async () => (await rows()) === total, { what: `all ${total} rows after restart (had ${atKill} at the kill); sink output: ${sinkOutput.slice(-2000)}`, timeoutMs: 120_000 });

    // Exactly the produced versions: every (resource, version) once, 1..25 per resource.
    const { rows: check } = await h.pool.query(
      `SELECT count(*)::int AS n, count(DISTINCT (resource_id, version))::int AS distinct_versions,
              count(*) FILTER (WHERE version <> rn)::int AS out_of_sequence,
              count(DISTINCT resource_id)::int AS resources, max(version) AS max_version
         FROM (SELECT resource_id, version, row_number() OVER (PARTITION BY resource_id ORDER BY version) AS rn
                 FROM ${h.table('resource_versions')}) v`,
    );
    expect(check[0]).toEqual({ n: total, distinct_versions: total, out_of_sequence: 0, resources, max_version: versions });
    const mismatched = await h.count(
      `SELECT count(*) n FROM ${h.table('resource_versions')} WHERE (body->>'version')::int <> version OR body->>'Id' <> resource_id`,
    );
    expect(mismatched).toBe(0);

    // The ops endpoints of the running sink: ready, and the rows it wrote counted.
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, { what: 'sink ready' });
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^billing_loader_sink_rows_written_total\{table="resource_versions"\} \d+$/m);
    expect(metrics).toMatch(/^billing_loader_sink_commit_latency_seconds_count \d+$/m);

    second.kill('SIGTERM');
    const [code] = (await once(second, 'exit')) as [number | null];
    expect(code, sinkOutput.slice(-2000)).toBe(0); // graceful shutdown
  });
});
