import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A TCP port nothing listens on right now, chosen below the kernel's ephemeral range, from this
 * test worker's own share of that window.
 *
 * Asking the kernel for port 0 hands out a port from the ephemeral range, the same range it
 * draws the local ports of outgoing connections from. Between the moment a test learns the
 * port and the moment its child process listens on it, one of the many client connections of a
 * test run (Kafka, PostgreSQL, the simulator) can take it, and the child then fails with
 * EADDRINUSE. Ports below that range are never handed out to outgoing connections, so only a
 * listener can take them.
 *
 * A port can also be free for a while and still be someone's: a broker starts seconds after its
 * ports are chosen, and a test that restarts a broker leaves its ports unbound in between. A
 * listening check alone would hand such a port to a test file running beside it. So each
 * worker draws from its own slice of the window (by VITEST_POOL_ID, unique among the workers
 * running at one time), and never hands out a port twice.
 */
export async function freePort(): Promise<number> {
  const [low, high] = portWindow();
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`freePort: no free port found between ${low} and ${high}`);
}

const handedOut = new Set<number>();

/** Slices of the window: one for a process outside the test workers, the rest one per worker. */
const SLICES = 8;

/**
 * [low, high): the slice of `poolId`'s ports in a window under the ephemeral range and above
 * the well-known ones. Workers 1-7 get slices 1-7; a process that is not a test worker (no
 * or an empty pool id) gets 0.
 */
export function portWindow(ephemeralRange = readEphemeralRange(), poolId = process.env.VITEST_POOL_ID): [number, number] {
  const [ephemeralLow] = ephemeralRange;
  const high = Math.min(ephemeralLow, 32_768);
  const low = Math.max(10_000, high - 12_000);
  const size = Math.floor((high - low) / SLICES);
  const id = Number(poolId);
  const slice = Number.isSafeInteger(id) && id > 0 ? 1 + ((id - 1) % (SLICES - 1)) : 0;
  return [low + slice * size, low + (slice + 1) * size];
}

function readEphemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // Not Linux: the IANA dynamic range.
  }
  return [49_152, 65_535];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    // The components listen on 0.0.0.0: check the same address.
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}
