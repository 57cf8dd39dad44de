import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registryService } from '../../src/stack/registry-service.js';
import type { StackService } from '../../src/stack/service.js';
import { defaultStackDir } from '../../src/stack/settings.js';
import { freePort } from '../../test/helpers/free-port.js';

/**
 * A schema registry of the soak's own: the local stack's Apicurio build (its `registry/dist`,
 * shared through a link), with its own port and H2 file in a temporary folder, so that
 * restarting it never touches the shared stack.
 */
export async function startPrivateRegistry(): Promise<{ service: StackService; address: string; dispose(): Promise<void> }> {
  const stackDir = process.env.STACK_DIR || defaultStackDir;
  const dir = mkdtempSync(join(tmpdir(), 'soak-registry-'));
  mkdirSync(join(dir, 'registry'), { recursive: true });
  symlinkSync(join(stackDir, 'registry', 'dist'), join(dir, 'registry', 'dist'));
  const port = await freePort();
  const service = registryService(dir, port);
  const dispose = async () => {
    try {
      await service.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    await service.start();
    await service.waitReady(180_000);
  } catch (err) {
    await dispose();
    throw err;
  }
  return { service, address: `http://127.0.0.1:${port}/apis/ccompat/v7`, dispose };
}
