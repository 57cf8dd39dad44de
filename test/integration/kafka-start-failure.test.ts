import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_KAFKA_LINE } from '../../src/stack/kafka-lines.js';
import { installKafkaLine, kafkaLibsDir, kafkaService } from '../../src/stack/kafka-service.js';
import { defaultStackDir } from '../../src/stack/settings.js';
import { nativeKafka } from '../faults/private-services.js';
import { freePort } from '../helpers/free-port.js';

/**
 * A broker that cannot start (here: its controller's port is taken) exits. Waiting for it must
 * end then, with the broker's own reason, instead of polling the port until the timeout and
 * reporting only that nothing listens.
 */
const stackDir = process.env.STACK_DIR || defaultStackDir;
const folders: string[] = [];
let blocker: Server | undefined;

afterAll(() => {
  blocker?.close();
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!nativeKafka)('a Kafka broker that exits while starting', () => {
  it('fails waitReady at once, with the reason from its log', async () => {
    const line = DEFAULT_KAFKA_LINE;
    await installKafkaLine(stackDir, line, () => undefined);
    const dir = mkdtempSync(join(tmpdir(), 'kafka-start-failure-'));
    folders.push(dir);
    mkdirSync(join(dir, 'kafka', line.name), { recursive: true });
    symlinkSync(kafkaLibsDir(stackDir, line), kafkaLibsDir(dir, line));
    // The controller's port is taken: the broker's client port stays free, so only the broker's
    // exit can tell the wait that nothing will ever listen there.
    const port = await freePort();
    const controllerPort = await freePort();
    blocker = createServer();
    await new Promise<void>((resolve) => blocker!.listen(controllerPort, '0.0.0.0', resolve));
    const service = kafkaService(dir, port, controllerPort);
    await service.start();
    const outcome = await service.waitReady(90_000).then(
      () => 'ready',
      (err: Error) => err.message,
    );
    await service.stop();
    expect(outcome).toContain(`kafka exited before listening on ${port}`);
    expect(outcome).toMatch(/Address already in use|BindException/);
  }, 150_000);
});
