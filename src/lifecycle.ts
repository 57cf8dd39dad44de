import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from './config.js';
import type { Logger } from './log.js';

/** What every pipeline stage's `start(deps, config)` returns: stop drains, commits and closes. */
export interface Running {
  stop(): Promise<void>;
}

/** Time the log gets to flush between the grace period's end and the forced exit. */
const HARD_EXIT_AFTER_MS = 1000;

/**
 * Runs until SIGTERM or SIGINT (or, with `stopWhenOrphaned`, until its parent process exits),
 * then calls `stop` once. If stopping takes longer than
 * `timeoutMs` (SHUTDOWN_TIMEOUT_MS), the process exits non-zero anyway (the orchestrator would
 * SIGKILL it soon after; exiting ourselves says so in the log first). A second signal exits at once.
 */
export function stopOnSignal(running: Running, log: Logger, timeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS, options: { stopWhenOrphaned?: boolean } = {}): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    let orphanWatch: NodeJS.Timeout | undefined;
    const onSignal = (signal: NodeJS.Signals | 'parent-exited') => {
      clearInterval(orphanWatch);
      if (stopping) {
        log.warn('second signal, exiting without waiting', { signal });
        process.exit(130);
      }
      stopping = true;
      log.info('shutting down', { signal, timeoutMs });
      const timer = setTimeout(() => {
        log.error('shutdown timeout exceeded, exiting', { timeoutMs });
        resolve(1);
        // The caller exits with 1 once it has returned; should anything hold it up (a stop that
        // hangs keeps its clients open), this ends the process regardless.
        setTimeout(() => process.exit(1), HARD_EXIT_AFTER_MS).unref();
      }, timeoutMs);
      timer.unref();
      running.stop().then(
        () => {
          clearTimeout(timer);
          log.info('stopped');
          resolve(0);
        },
        (err: unknown) => {
          clearTimeout(timer);
          log.error('shutdown failed', { err });
          resolve(1);
        },
      );
    };
    // `on`, not `once`: the second signal must reach onSignal too (exit 130, logged), rather than
    // node's default action, which kills the process without a word.
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    if (options.stopWhenOrphaned) {
      // `npx billing-loader` runs the loader under `sh -c`: npm passes a SIGTERM on to that shell,
      // which dies of it without passing it on, and the loader would run on, reparented. Its
      // parent changing is then the only sign of the stop it was sent.
      const parent = process.ppid;
      orphanWatch = setInterval(() => {
        if (process.ppid !== parent) onSignal('parent-exited');
      }, 250);
      orphanWatch.unref();
    }
  });
}
