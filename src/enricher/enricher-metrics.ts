import { Counter, Histogram, type Registry } from 'prom-client';
import { deadLetterCounter } from '../kafka/dead-letter-metrics.js';
import type { DeadLetter } from '../wire/dead-letter.js';

/** The enricher's metrics (prefix billing_loader_enricher_), registered on the process registry. */
export function createEnricherMetrics(registry: Registry) {
  const p = 'billing_loader_enricher_';
  const deadLetters = new Counter({ name: `${p}dead_letters_total`, help: 'Records sent to a DLQ, by topic and error class', labelNames: ['topic', 'error_class'], registers: [registry] });
  const allDeadLetters = deadLetterCounter(registry);
  return {
    /** Counts letters made durable (both this stage's counter and billing_loader_dead_letters_total). */
    deadLettered(letters: readonly DeadLetter[]): void {
      for (const l of letters) deadLetters.inc({ topic: l.dlqTopic, error_class: l.errorClass });
      allDeadLetters('enricher', letters);
    },
    webhooksRouted: new Counter({ name: `${p}webhooks_total`, help: 'Webhook records read, by event (unknown events share one label)', labelNames: ['event'], registers: [registry] }),
    requests: new Counter({ name: `${p}fetch_requests_total`, help: 'Fetch requests consumed (one per resource a webhook refers to, plus contract-to-customer follow-ups)', registers: [registry] }),
    fetches: new Counter({ name: `${p}fetches_total`, help: 'Resource fetches made, by type and outcome (found, gone, prefetched)', labelNames: ['type', 'outcome'], registers: [registry] }),
    coalesced: new Counter({ name: `${p}coalesced_requests_total`, help: 'Requests answered by a fetch made for another request of the same resource', registers: [registry] }),
    versions: new Counter({ name: `${p}versions_total`, help: 'New versions published, by type and whether they record a deletion', labelNames: ['type', 'deleted'], registers: [registry] }),
    unchanged: new Counter({ name: `${p}unchanged_total`, help: 'Fetches whose content equals the latest version (no version published)', labelNames: ['type'], registers: [registry] }),
    pauses: new Counter({ name: `${p}partition_pauses_total`, help: 'Partition pauses while the billing API is unavailable or refusing our credentials', labelNames: ['reason'], registers: [registry] }),
    rereads: new Counter({ name: `${p}rereads_scheduled_total`, help: 'Resources put on the delay topic to be read again later, by reason (not-found-yet, gone-unconfirmed, unreadable)', labelNames: ['type', 'reason'], registers: [registry] }),
    givenUp: new Counter({ name: `${p}given_up_total`, help: 'Requests given up after their rereads (each also a DLQ record), by reason (not-found, unreadable-body)', labelNames: ['type', 'reason'], registers: [registry] }),
    forwarded: new Counter({ name: `${p}delayed_forwarded_total`, help: 'Delayed requests written back to the request topic once due', registers: [registry] }),
    freshness: new Histogram({
      name: `${p}webhook_to_version_seconds`,
      help: 'From webhook receipt to the transaction that published its resource state',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    hiddenCommits: new Counter({ name: `${p}hidden_commits_total`, help: 'Partitions found with records the fetcher committed still hidden from read-committed readers after ENRICHER_HANGING_TRANSACTION_MS (a transaction left open without markers); each makes the fetcher close its transactions again', labelNames: ['topic'], registers: [registry] }),
    headsRestored: new Counter({ name: `${p}heads_restored_total`, help: 'Head records read from the heads topic into the local head cache at partition assignment, by mode (resumed: from where the cache was left; full: from the start, the cache being empty or not trusted)', labelNames: ['mode'], registers: [registry] }),
  };
}

export type EnricherMetrics = ReturnType<typeof createEnricherMetrics>;
