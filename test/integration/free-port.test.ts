import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, portWindow } from '../helpers/free-port.js';

describe('freePort', () => {
  it('stays below the ephemeral range the kernel gives outgoing connections', () => {
    expect(portWindow([32_768, 60_999])).toEqual([20_768, 32_768]);
    expect(portWindow([49_152, 65_535])).toEqual([20_768, 32_768]);
    expect(portWindow([15_000, 60_999])).toEqual([10_000, 15_000]);
  });

  it('gives distinct ports that a server can listen on', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) {
      const server = createServer();
      await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '0.0.0.0', resolve));
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
