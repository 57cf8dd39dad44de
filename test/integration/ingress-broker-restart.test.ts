import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_KAFKA_LINE } from '../../src/stack/kafka-lines.js';
import { installKafkaLine, kafkaLibsDir, kafkaService } from '../../src/stack/kafka-service.js';
import type { StackService } from '../../src/stack/service.js';
import { defaultStackDir } from '../../src/stack/settings.js';
import { waitFor } from '../helpers/wait-for.js';
import { freePort } from '../helpers/free-port.js';
import { startTestIngress, type TestIngress } from './ingress-harness.js';

/**
 * Stopping the shared test broker would break every other test file running at the same time, so
 * this file starts a broker of its own (the native stack's Kafka jars, a temporary data folder,
 * free ports) and stops, pauses and restarts that one. It needs the native stack's jars and a
 * JVM; where the stack runs in containers instead, the file is skipped.
 */
const stackDir = process.env.STACK_DIR || defaultStackDir;
const nativeStack = existsSync(join(stackDir, 'kafka'));

let dir: string;
let broker: StackService;
let t: TestIngress;

beforeAll(async () => {
  if (!nativeStack) return;
  dir = mkdtempSync(join(tmpdir(), 'ingress-broker-'));
  await installKafkaLine(stackDir, DEFAULT_KAFKA_LINE, () => undefined);
  mkdirSync(join(dir, 'kafka', DEFAULT_KAFKA_LINE.name), { recursive: true });
  symlinkSync(kafkaLibsDir(stackDir), kafkaLibsDir(dir));
  const port = await freePort();
  broker = kafkaService(dir, port, await freePort());
  await broker.start();
  await broker.waitReady(90_000);
  t = await startTestIngress({ produceTimeoutMs: 3000 }, { KAFKA_BROKERS: `127.0.0.1:${port}` }, { quiet: true });
}, 180_000);

afterAll(async () => {
  try {
    await t?.stop();
  } finally {
    if (broker) {
      // A paused broker would ignore SIGTERM until continued.
      const pid = broker.runningPid();
      if (pid !== undefined) process.kill(pid, 'SIGCONT');
      await broker.stop();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

const webhook = (id: string) => ({ Event: 'ContractChanged', ContractId: id });

async function ready(): Promise<number> {
  return (await fetch(`${t.ingress.url}/readyz`)).status;
}

describe.skipIf(!nativeStack)('ingress: broker down or not acknowledging', () => {
  it('answers 503 while the broker is stopped, and 200 again after it restarts, without an ingress restart', async () => {
    const before = await t.post(webhook('c-before'));
    expect(before.status).toBe(200);

    await broker.stop();
    const during = await t.post(webhook('c-during'));
    expect(during.status).toBe(503);
    expect(during.body.error).toMatch(/could not be persisted \(Kafka is unavailable\)/);
    expect(during.body.error).not.toContain('127.0.0.1'); // broker addresses stay in the log
    await waitFor(async () => (await ready()) === 503, { what: '/readyz reports Kafka unreachable' });

    await broker.start();
    await broker.waitReady(90_000);
    // The sender retries until a 200 (spec 6.1); so does this loop, with the same ingress.
    const after = await waitFor(
      async () => {
        const answer = await t.post(webhook('c-after'));
        return answer.status === 200 ? answer : undefined;
      },
      { what: 'a post gets 200 after the broker restarted', timeoutMs: 60_000, intervalMs: 250 },
    );
    await waitFor(async () => (await ready()) === 200, { what: '/readyz ready again' });

    const ids = new Set((await t.readAll()).map((r) => r.value.event_id));
    expect(ids.has(before.body.event_id as string)).toBe(true);
    expect(ids.has(after.body.event_id as string)).toBe(true);
  }, 240_000);

  it('answers 503 when the broker does not acknowledge within the bound, and recovers when it does again', async () => {
    const pid = broker.runningPid() as number;
    process.kill(pid, 'SIGSTOP');
    let stalled;
    try {
      stalled = await t.post(webhook('c-stalled'));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(stalled.status).toBe(503);
    expect(stalled.body.error).toMatch(/did not acknowledge the write within 3000 ms/);

    const after = await waitFor(
      async () => {
        const answer = await t.post(webhook('c-resumed'));
        return answer.status === 200 ? answer : undefined;
      },
      { what: 'a post gets 200 after the broker resumed', timeoutMs: 60_000, intervalMs: 250 },
    );
    const ids = new Set((await t.readAll()).map((r) => r.value.event_id));
    expect(ids.has(after.body.event_id as string)).toBe(true);
  }, 120_000);
});
