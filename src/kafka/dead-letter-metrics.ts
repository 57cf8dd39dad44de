import { Counter, type Registry } from 'prom-client';
import type { DeadLetter } from '../wire/dead-letter.js';

export const DEAD_LETTERS_METRIC = 'billing_loader_dead_letters_total';

/**
 * Dead letters written, by stage, DLQ topic and error class: one counter for every stage, so that
 * one rule alerts on any of them (`increase(billing_loader_dead_letters_total[15m]) > 0`).
 * Counted once the letters are durable (sent, or their transaction committed). Registered once per
 * registry (the `run` command shares one registry among its stages).
 */
export function deadLetterCounter(registry: Registry): (stage: string, letters: readonly DeadLetter[]) => void {
  let counter = registry.getSingleMetric(DEAD_LETTERS_METRIC) as Counter<'stage' | 'topic' | 'error_class'> | undefined;
  counter ??= new Counter({ name: DEAD_LETTERS_METRIC, help: 'Records sent to a DLQ, by stage, DLQ topic and error class', labelNames: ['stage', 'topic', 'error_class'], registers: [registry] });
  const c = counter;
  return (stage, letters) => {
    for (const l of letters) c.inc({ stage, topic: l.dlqTopic, error_class: l.errorClass });
  };
}
