import { errorMessage } from '../errors.js';
import type { Health } from '../health.js';
import type { Logger } from '../log.js';
import type { WatchMetrics } from './watch-metrics.js';

/** What a stage reports at each check. */
export interface StageSample {
  /** Work waiting for the stage (records behind, bytes not yet acknowledged); 0 when it has none. */
  lag: number;
  /** Whether the stage committed progress since the previous check. */
  progressed: boolean;
  /** What it waits for, for the log (partitions with their offsets, bytes pending). */
  waitingFor: unknown;
}

/** A stage under watch: the ingress, the router, the fetcher, the delay forwarder or the sink. */
export interface WatchedStage {
  stage: string;
  sample(): Promise<StageSample>;
  /** Replaces the stage's consumers and producers. */
  restart(): Promise<void>;
}

export interface WatchdogSettings {
  /** How often each stage is checked, in ms. */
  checkIntervalMs: number;
  /** Lag without progress for this long restarts the stage's consumers and producers, in ms (0: never). */
  stallMs: number;
  /** Still stalled this long after that restart: liveness fails, in ms. */
  livenessMs: number;
}

export interface StageWatch {
  /** The gauges the watch and its stages' lag checks set. */
  metrics: WatchMetrics;
  /** Watches `stage` until the returned function is called. */
  watch(stage: WatchedStage): () => void;
  /** Checks every stage once now (the timer does so every checkIntervalMs). */
  check(): Promise<void>;
  stop(): void;
}

/** Liveness condition name of a stage whose restart did not help. */
export const livenessCondition = (stage: string) => `stage.${stage}`;

/** Longest wait for one stage's check or restart; a hung one must not hold up the others' checks. */
const STEP_TIMEOUT_MS = 30_000;

interface State {
  lastProgressAt: number;
  lag: number;
  restartedAt?: number;
  failedLiveness: boolean;
}

/**
 * The stall watchdog. Every checkIntervalMs it samples each stage: lag and whether committed
 * offsets moved. `billing_loader_stage_stalled_seconds` counts from the last progress while
 * there is lag. After `stallMs` of that the watchdog logs what the stage waits for and restarts
 * its consumers and producers, once; if the stage is still stalled `livenessMs` later, it fails
 * the process's liveness, so that its supervisor (systemd, Kubernetes) restarts the process.
 * Progress clears both. A check that fails (the broker away) keeps the last known lag.
 */
export function startStageWatch(deps: { log: Logger; health: Health; metrics: WatchMetrics; settings: WatchdogSettings; now?: () => number }): StageWatch {
  const { log, health, metrics, settings } = deps;
  const now = deps.now ?? Date.now;
  const stages = new Map<WatchedStage, State>();
  let stopped = false;
  let running: Promise<void> | undefined;

  const bounded = <T>(work: Promise<T>, what: string): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took over ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
      timer.unref();
    });
    return Promise.race([work, limit]).finally(() => clearTimeout(timer));
  };

  const checkStage = async (stage: WatchedStage, state: State) => {
    let sample: StageSample | undefined;
    try {
      sample = await bounded(stage.sample(), 'lag check');
    } catch (err) {
      log.debug('stage lag check failed', { stage: stage.stage, err: errorMessage(err) });
    }
    if (!stages.has(stage)) return;
    const at = now();
    if (sample) state.lag = sample.lag;
    if (sample?.progressed || state.lag === 0) {
      if (state.restartedAt !== undefined) log.info('stage progressing again', { stage: stage.stage });
      state.lastProgressAt = at;
      state.restartedAt = undefined;
      if (state.failedLiveness) health.setLiveness(livenessCondition(stage.stage), undefined);
      state.failedLiveness = false;
      metrics.stalled.set({ stage: stage.stage }, 0);
      return;
    }
    const stalledMs = at - state.lastProgressAt;
    metrics.stalled.set({ stage: stage.stage }, stalledMs / 1000);
    if (settings.stallMs === 0 || stalledMs < settings.stallMs || stopped) return;
    const details = { stage: stage.stage, stalledSeconds: Math.round(stalledMs / 1000), lag: state.lag, waitingFor: sample?.waitingFor ?? 'lag unknown: the last check failed' };
    if (state.restartedAt === undefined) {
      log.error('stage stalled, restarting its consumers and producers', details);
      state.restartedAt = at;
      metrics.restarts.inc({ stage: stage.stage });
      // Not awaited: a restart waits for the old consumer to let go (up to seconds), and the
      // other stages' checks go on meanwhile.
      bounded(stage.restart(), 'restart').catch((err: unknown) => log.error('stage restart failed', { stage: stage.stage, err: errorMessage(err) }));
      return;
    }
    if (!state.failedLiveness && at - state.restartedAt >= settings.livenessMs) {
      state.failedLiveness = true;
      log.error('stage still stalled after its restart, failing liveness', details);
      health.setLiveness(livenessCondition(stage.stage), `stalled for ${details.stalledSeconds} s with ${state.lag} records waiting; a restart of its consumers and producers did not help`);
    }
  };

  const check = async () => {
    if (running) return running;
    running = Promise.all([...stages].map(([stage, state]) => checkStage(stage, state))).then(() => undefined);
    try {
      await running;
    } finally {
      running = undefined;
    }
  };

  const timer = setInterval(() => void check(), settings.checkIntervalMs);
  timer.unref();

  return {
    metrics,
    watch(stage) {
      stages.set(stage, { lastProgressAt: now(), lag: 0, failedLiveness: false });
      return () => {
        const state = stages.get(stage);
        stages.delete(stage);
        metrics.stalled.remove({ stage: stage.stage });
        if (state?.failedLiveness) health.setLiveness(livenessCondition(stage.stage), undefined);
      };
    },
    check,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
