import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `condition` until it returns a truthy value (returned) or `timeoutMs` passes (throws,
 * with the last error or falsy result in the message). Tests wait with this, never a fixed sleep.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`waitFor${options.what ? ` (${options.what})` : ''}: not true within ${timeoutMs} ms; last: ${detail}`);
    }
    await sleep(options.intervalMs ?? 50);
  }
}
