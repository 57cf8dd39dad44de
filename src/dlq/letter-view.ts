import type { Registry } from '../registry/registry.js';
import { classifyRegistryError } from '../errors.js';
import { formatLetterId, type StoredDeadLetter } from '../wire/dead-letter.js';

/** How `dlq show` presents bytes: as the value they encode when that can be told, else as text or base64. */
export type Presented = { encoding: 'avro'; schemaId: number; value: unknown } | { encoding: 'json'; value: unknown } | { encoding: 'text'; value: string } | { encoding: 'base64'; value: string } | null;

/** Text without control characters (tab, newline and carriage return allowed) and without bytes that were no UTF-8. */
const printable = (text: string) => ![...text].some((ch) => {
  const c = ch.codePointAt(0) as number;
  return (c < 0x20 && c !== 9 && c !== 10 && c !== 13) || c === 0x7f || c === 0xfffd;
});

/** JSON.stringify cannot print Buffers as bytes nor BigInts at all. */
const plain = (v: unknown): unknown => {
  if (Buffer.isBuffer(v)) return { base64: v.toString('base64') };
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
};

/** Bytes presented: Confluent-framed Avro decoded through the registry, JSON text parsed, other text as is, the rest base64. */
export async function present(bytes: Buffer | null, registry: Registry): Promise<Presented> {
  if (bytes === null) return null;
  if (bytes.length >= 5 && bytes[0] === 0) {
    try {
      return { encoding: 'avro', schemaId: bytes.readInt32BE(1), value: plain(await registry.decode(bytes)) };
    } catch (err) {
      // Not Avro after all (or of an unknown schema): shown as bytes. An unreachable registry is an error.
      if (classifyRegistryError(err, bytes) === 'transient') throw err;
    }
  }
  const text = bytes.toString('utf8');
  if (!printable(text)) return { encoding: 'base64', value: bytes.toString('base64') };
  try {
    return { encoding: 'json', value: JSON.parse(text) as unknown };
  } catch {
    return { encoding: 'text', value: text };
  }
}

/** What `dlq show` prints for one letter (JSON). */
export async function letterView(letter: StoredDeadLetter, registry: Registry, redriven: { redrivenAt: string; to: string } | undefined) {
  return {
    id: formatLetterId(letter.id),
    format: letter.format,
    stage: letter.stage,
    errorClass: letter.errorClass,
    errorMessage: letter.errorMessage,
    failedAt: new Date(letter.failedAt).toISOString(),
    source: { topic: letter.sourceTopic, partition: letter.sourcePartition, offset: letter.sourceOffset },
    redriven: redriven ?? null,
    headers: Object.fromEntries(Object.entries(letter.headers).map(([k, v]) => [k, v.toString('utf8')])),
    key: letter.key === null ? null : printable(letter.key.toString('utf8')) ? letter.key.toString('utf8') : { base64: letter.key.toString('base64') },
    value: await present(letter.value, registry),
    ...(letter.valueDroppedBytes > 0 ? { valueNotKeptBytes: letter.valueDroppedBytes } : {}),
  };
}
