/**
 * How the enricher's internal JSON records (fetch requests on the requests and delayed topics,
 * heads on the heads topic) change format without a rolling upgrade or a rollback dead-lettering
 * them. Every record carries `v`, the format it was written in; a record of a format newer than
 * its reader's also carries `readableFrom`, the oldest reader format that can act on it.
 *
 * - A change that only adds fields an older reader may ignore bumps `v` and keeps `readableFrom`:
 *   an older reader reads the fields it knows and drops the others (the decoders pick fields, never
 *   spread the record), so old and new instances of a rolling upgrade read each other's records.
 * - A change an older reader must not act on raises `readableFrom` too. It takes two releases, as
 *   Kafka Streams' two-bounce `upgrade.from` does: first a release that reads the new format but
 *   still writes the old one, rolled out everywhere; then the release that writes it.
 * - A reader keeps decoding every older format it may meet on a topic (the requests and delayed
 *   topics keep a week; the heads topic is compacted, so its oldest format stays until rewritten).
 */
export interface FormatFields {
  v?: unknown;
  readableFrom?: unknown;
}

const formatNumber = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1;

/** Throws unless a reader of format `own` can read `record`; `what` names the record in the message. */
export function assertReadable(record: FormatFields, own: number, what: string): void {
  if (!formatNumber(record.v)) throw new Error(`${what} without a format number`);
  if (record.v <= own) return;
  const oldest = record.readableFrom ?? record.v;
  if (!formatNumber(oldest) || oldest > own) throw new Error(`${what} format ${record.v} needs a reader of format ${String(oldest)} or later; this one reads up to ${own}`);
}
