import type { Logger } from './log.js';

/** What every pipeline stage's `start(deps, config)` returns: stop drains, commits and closes. */
export interface Running {
  stop(): Promise<void>;
}

/**
 * Runs until SIGTERM or SIGINT, then calls `stop` once. If stopping takes longer than
 * `graceMs`, the process exits non-zero anyway (the orchestrator would SIGKILL it soon after;
 * exiting ourselves says so in the log first). A second signal exits at once.
 */
export function stopOnSignal(running: Running, log: Logger, graceMs = 30_000): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn('second signal, exiting without waiting', { signal });
        process.exit(130);
      }
      stopping = true;
      log.info('shutting down', { signal, graceMs });
      const timer = setTimeout(() => {
        log.error('shutdown grace period exceeded, exiting', { graceMs });
        resolve(1);
      }, graceMs);
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
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
}
