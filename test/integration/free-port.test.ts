import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, portWindow } from '../helpers/free-port.js';

describe('freePort', () => {
  it('stays below the ephemeral range the kernel gives outgoing connections', () => {
    expect(portWindow([32_768, 60_999], '')).toEqual([20_768, 22_268]);
    expect(portWindow([32_768, 60_999], '7')).toEqual([31_268, 32_768]);
    expect(portWindow([49_152, 65_535], '7')).toEqual([31_268, 32_768]);
    expect(portWindow([15_000, 60_999], '7')).toEqual([14_375, 15_000]);
  });

  it('gives the test workers running at one time disjoint slices', () => {
    const slices = ['1', '2', '3', '4', '5', '6', '7', ''].map((id) => portWindow([32_768, 60_999], id));
    const ports = slices.flatMap(([low, high]) => Array.from({ length: high - low }, (_, i) => low + i));
    expect(new Set(ports).size).toBe(ports.length);
    expect(Math.min(...ports)).toBe(20_768);
    for (const [low, high] of slices) expect(high - low).toBe(1_500);
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
