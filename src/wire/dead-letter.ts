import type { IHeaders, KafkaMessage } from 'kafkajs';
import { classifyRegistryError } from '../errors.js';

/**
 * One record for a DLQ: the source record byte for byte (key, value and headers), and why it
 * failed. Written as the source record itself with the context in headers (DEAD_LETTER_HEADERS),
 * the layout of Kafka Connect's dead-letter queue with context headers (KIP-298).
 */
export interface DeadLetter {
  dlqTopic: string;
  sourceTopic: string;
  sourcePartition: number;
  sourceOffset: string;
  sourceKey: Buffer | null;
  sourceValue: Buffer | null;
  /** The source record's own headers, kept on the letter (none of the loader's records has any today). */
  sourceHeaders?: IHeaders;
  errorClass: string;
  errorMessage: string;
}

/** The dead letter of a record read from `sourceTopic` partition `partition`. */
export function deadLetterFor(
  dlqTopic: string,
  sourceTopic: string,
  partition: number,
  message: Pick<KafkaMessage, 'offset'> & Partial<Pick<KafkaMessage, 'key' | 'value' | 'headers'>>,
  errorClass: string,
  text: string,
): DeadLetter {
  return {
    dlqTopic,
    sourceTopic,
    sourcePartition: partition,
    sourceOffset: message.offset,
    sourceKey: message.key ?? null,
    sourceValue: message.value ?? null,
    ...(message.headers && Object.keys(message.headers).length > 0 ? { sourceHeaders: message.headers } : {}),
    errorClass,
    errorMessage: text,
  };
}

/**
 * The headers of a dead letter, UTF-8 text each (numbers in decimal). The `__connect.errors.*`
 * names are Kafka Connect's (org.apache.kafka.connect.runtime.errors.DeadLetterQueueReporter), so
 * tools that show a Connect DLQ show these; `stage` is the loader's stage (enricher, sink) and
 * `exception.class.name` its error class (decode, not-found, version-conflict, ...), not a Java
 * class. What Connect has no header for is under `billing_loader.dlq.`.
 */
export const DEAD_LETTER_HEADERS = {
  topic: '__connect.errors.topic',
  partition: '__connect.errors.partition',
  offset: '__connect.errors.offset',
  stage: '__connect.errors.stage',
  errorClass: '__connect.errors.exception.class.name',
  errorMessage: '__connect.errors.exception.message',
  /** When the stage gave the record up, in milliseconds since the epoch. */
  failedAt: 'billing_loader.dlq.failed_at',
  /** Set when the source value was not kept (the letter would exceed the DLQ's max.message.bytes): its length in bytes. */
  valueDropped: 'billing_loader.dlq.value_dropped_bytes',
} as const;

const CONTEXT_HEADER_NAMES: ReadonlySet<string> = new Set(Object.values(DEAD_LETTER_HEADERS));

/** Whether a header is one the loader puts on a dead letter (the rest are the source record's own). */
export const isContextHeader = (name: string): boolean => CONTEXT_HEADER_NAMES.has(name) || name.startsWith('__connect.errors.');

/** The context headers of a letter, given up by `stage` at `failedAt`. */
export function deadLetterHeaders(letter: DeadLetter, stage: string, failedAt: number, valueDropped?: number): Record<string, string> {
  const H = DEAD_LETTER_HEADERS;
  return {
    [H.topic]: letter.sourceTopic,
    [H.partition]: String(letter.sourcePartition),
    [H.offset]: letter.sourceOffset,
    [H.stage]: stage,
    [H.errorClass]: letter.errorClass,
    [H.errorMessage]: letter.errorMessage,
    [H.failedAt]: String(failedAt),
    ...(valueDropped === undefined ? {} : { [H.valueDropped]: String(valueDropped) }),
  };
}

/** Where a DLQ record is: the letter's identity (`<topic>:<partition>:<offset>`), what `dlq show` and a redrive marker name. */
export interface LetterId {
  topic: string;
  partition: number;
  offset: string;
}

export const formatLetterId = (id: LetterId): string => `${id.topic}:${id.partition}:${id.offset}`;

/** Parses `<topic>:<partition>:<offset>` (the topic may itself contain colons: the last two fields are the numbers). */
export function parseLetterId(text: string): LetterId | undefined {
  const m = /^(.+):(\d+):(\d+)$/.exec(text);
  return m ? { topic: m[1] as string, partition: Number(m[2]), offset: m[3] as string } : undefined;
}

/**
 * A record read back from a DLQ, in either format: `headers` (the current one: the source record
 * with context headers) or `envelope` (the earlier one: an Avro record of schemas/dead-letter.avsc
 * wrapping the source record, no headers). `unknown`: neither; its fields are empty.
 */
export interface StoredDeadLetter {
  id: LetterId;
  format: 'headers' | 'envelope' | 'unknown';
  stage: string;
  errorClass: string;
  errorMessage: string;
  sourceTopic: string;
  sourcePartition: number;
  sourceOffset: string;
  /** Milliseconds since the epoch. */
  failedAt: number;
  /** The source record's key, value and own headers, byte for byte (value null when it was not kept). */
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
  /** Bytes of the source value not kept in the letter (0 when kept). */
  valueDroppedBytes: number;
}

/** The earlier format's fields (schemas/dead-letter.avsc), as the registry decodes them. */
interface EnvelopeValue {
  source_topic: string;
  source_partition: number;
  source_offset: number | bigint;
  source_key: Buffer | null;
  source_value: Buffer | null;
  stage: string;
  error_class: string;
  error_message: string;
  failed_at: number | Date;
}

const isEnvelope = (v: unknown): v is EnvelopeValue => {
  const r = v as Record<string, unknown> | null;
  return typeof r === 'object' && r !== null && typeof r.source_topic === 'string' && typeof r.stage === 'string' && typeof r.error_class === 'string' && 'source_offset' in r;
};

/** A header's decimal number; undefined when absent or not a whole number (a letter written by hand, say). */
const wholeNumber = (text: string | undefined): number | undefined => (text !== undefined && /^\d{1,16}$/.test(text) ? Number(text) : undefined);

const headerText = (v: IHeaders[string]): string | undefined => {
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : Buffer.isBuffer(one) ? one.toString('utf8') : String(one);
};

const headerBytes = (v: IHeaders[string]): Buffer => {
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? Buffer.alloc(0) : Buffer.isBuffer(one) ? one : Buffer.from(one);
};

/**
 * Reads a DLQ record in either format. `decode` decodes a Confluent-framed Avro value (the
 * registry's); it is called only for a record without context headers, and what it throws
 * (an unreachable registry) is thrown on: the record is fine, the reader should retry.
 */
export async function readDeadLetter(id: LetterId, message: Pick<KafkaMessage, 'key' | 'value' | 'headers' | 'timestamp'>, decode: (value: Buffer) => Promise<unknown>): Promise<StoredDeadLetter> {
  const headers = message.headers ?? {};
  const H = DEAD_LETTER_HEADERS;
  const stage = headerText(headers[H.stage]);
  if (stage !== undefined) {
    const own: Record<string, Buffer> = {};
    for (const [name, v] of Object.entries(headers)) if (!isContextHeader(name)) own[name] = headerBytes(v);
    return {
      id,
      format: 'headers',
      stage,
      errorClass: headerText(headers[H.errorClass]) ?? '',
      errorMessage: headerText(headers[H.errorMessage]) ?? '',
      sourceTopic: headerText(headers[H.topic]) ?? '',
      sourcePartition: wholeNumber(headerText(headers[H.partition])) ?? -1,
      sourceOffset: String(wholeNumber(headerText(headers[H.offset])) ?? -1),
      failedAt: wholeNumber(headerText(headers[H.failedAt])) ?? Number(message.timestamp),
      key: message.key ?? null,
      value: message.value ?? null,
      headers: own,
      valueDroppedBytes: wholeNumber(headerText(headers[H.valueDropped])) ?? 0,
    };
  }
  const unknown: StoredDeadLetter = { id, format: 'unknown', stage: 'unknown', errorClass: 'unknown', errorMessage: '', sourceTopic: '', sourcePartition: -1, sourceOffset: '-1', failedAt: Number(message.timestamp), key: message.key ?? null, value: message.value ?? null, headers: {}, valueDroppedBytes: 0 };
  // The earlier format: a Confluent-framed Avro value (magic byte 0 and a schema id).
  if (!message.value || message.value.length < 5 || message.value[0] !== 0) return unknown;
  let value: unknown;
  try {
    value = await decode(message.value);
  } catch (err) {
    // Bytes that are no Avro of their schema are an unknown record; an unreachable registry, or
    // one that does not know the id, is thrown on: the record may well be a letter.
    if (classifyRegistryError(err, message.value) === 'bad-record') return unknown;
    throw err;
  }
  if (!isEnvelope(value)) return unknown;
  const dropped = value.source_value === null ? /source value of (\d+) bytes not kept/.exec(value.error_message) : null;
  return {
    id,
    format: 'envelope',
    stage: value.stage,
    errorClass: value.error_class,
    errorMessage: value.error_message,
    sourceTopic: value.source_topic,
    sourcePartition: value.source_partition,
    sourceOffset: String(value.source_offset),
    failedAt: value.failed_at instanceof Date ? value.failed_at.getTime() : Number(value.failed_at),
    key: value.source_key ? Buffer.from(value.source_key) : null,
    value: value.source_value ? Buffer.from(value.source_value) : null,
    headers: {},
    valueDroppedBytes: dropped ? Number(dropped[1]) : 0,
  };
}
