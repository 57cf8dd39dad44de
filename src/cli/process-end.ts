import { Socket } from 'node:net';

/** How long a process may outlive its command's return: time for the log to flush. */
export const END_GRACE_MS = 1000;

/**
 * Sets the exit code of a command that has returned and makes sure the process then ends. A
 * command returns once it has stopped everything it started, so whatever still holds the process
 * open is left behind: a Kafka client call that never settles, a connection a client library
 * opened again while it was being stopped (a consumer group rejoining during the stop). Without
 * this, such a process stays up after a clean stop, silent, until its supervisor kills it. After
 * `graceMs` the resources still open are named on stderr (one JSON log line, with the address of
 * every connected socket: a Kafka broker's port, the billing API's) and the process exits with the
 * command's code. The timer is unreferenced: a process with nothing left open exits at
 * once, as usual.
 *
 * Self-contained (node's modules only): bin/billing-loader.js calls it after the CLI returns.
 */
export function endAfterReturn(exitCode: number, graceMs: number = END_GRACE_MS): void {
  process.exitCode = exitCode;
  setTimeout(() => {
    const open = process.getActiveResourcesInfo();
    process.stderr.write(
      `${JSON.stringify({ level: 'warn', time: new Date().toISOString(), pid: process.pid, exitCode, open, peers: connectedPeers(), msg: 'the command returned with resources still open; exiting' })}\n`,
    );
    process.exit(exitCode);
  }, graceMs).unref();
}

/** host:port of every socket still connected. node lists its open handles only through an undocumented call; without it, none. */
function connectedPeers(): string[] {
  const handles = (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.() ?? [];
  return handles.filter((h): h is Socket => h instanceof Socket && h.remotePort !== undefined).map((s) => `${s.remoteAddress}:${s.remotePort}`);
}
