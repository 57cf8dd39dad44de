import type { Admin, Kafka } from 'kafkajs';
import { errorMessage } from '../errors.js';
import { createCommitVisibility, lastStableOffsets, type CommittedWrite } from '../kafka/commit-visibility.js';
import type { Logger } from '../log.js';
import type { EnricherMetrics } from './enricher-metrics.js';

export interface HiddenCommitWatch {
  /** Records a committed transaction's writes (part-publisher.ts). */
  committed(writes: CommittedWrite[]): void;
  stop(): Promise<void>;
}

/**
 * Watches that what the fetcher commits becomes visible to read-committed readers. A commit still
 * hidden after `hiddenAfterMs` sits behind a transaction left open without markers (a hanging
 * transaction): `closeTransactions` then starts the fetcher's partitions over, whose preparation
 * closes whatever its transactional ids left open in every partition it writes
 * (hanging-transactions.ts). Without this, a hanging transaction left after a commit that needed
 * no retry (so no new preparation) would hide the partition from every reader for good, with
 * every lag gauge at 0: lag is counted to the last stable offset.
 */
export function watchHiddenCommits(deps: {
  kafka: Kafka;
  log: Logger;
  metrics: Pick<EnricherMetrics, 'hiddenCommits'>;
  hiddenAfterMs: number;
  closeTransactions: () => Promise<void>;
}): HiddenCommitWatch {
  const visibility = createCommitVisibility({ hiddenAfterMs: deps.hiddenAfterMs });
  const intervalMs = Math.min(15_000, Math.max(1000, Math.floor(deps.hiddenAfterMs / 6)));
  let admin: Admin | undefined;
  let checking: Promise<void> | undefined;
  const check = async () => {
    const topics = visibility.topics();
    if (topics.length === 0) return;
    try {
      if (!admin) {
        const a = deps.kafka.admin();
        await a.connect();
        admin = a;
      }
      const offsets = await lastStableOffsets(admin, topics);
      const hidden = visibility.check((topic) => offsets.get(topic));
      if (hidden.length === 0) return;
      for (const h of hidden) deps.metrics.hiddenCommits.inc({ topic: h.topic });
      deps.log.warn('committed records still hidden behind a transaction left open: closing the fetcher\'s transactions again', {
        partitions: hidden.map((h) => `${h.topic}/${h.partition}: last stable ${h.lastStable}, committed up to ${h.end}, ${Math.round(h.hiddenMs / 1000)} s`),
      });
      await deps.closeTransactions();
    } catch (err) {
      deps.log.warn('checking that committed records became visible failed; trying again', { err: errorMessage(err) });
      const a = admin;
      admin = undefined;
      await a?.disconnect().catch(() => undefined);
    }
  };
  const timer = setInterval(() => {
    checking ??= check().finally(() => (checking = undefined));
  }, intervalMs);
  timer.unref();
  return {
    committed: (writes) => visibility.committed(writes),
    async stop() {
      clearInterval(timer);
      await checking;
      await admin?.disconnect().catch(() => undefined);
    },
  };
}
