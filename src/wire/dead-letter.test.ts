import { describe, expect, it } from 'vitest';
import { createDeadLetterEncoder } from '../kafka/dead-letters.js';
import { DEAD_LETTER_HEADERS, deadLetterFor, formatLetterId, parseLetterId, readDeadLetter } from './dead-letter.js';

const noDecode = () => Promise.reject(new Error('not called'));
const asMessage = (m: { key?: Buffer | string | null; value: Buffer | string | null; headers?: Record<string, unknown> }) => ({
  key: m.key == null ? null : Buffer.from(m.key),
  value: m.value === null ? null : Buffer.from(m.value),
  headers: Object.fromEntries(Object.entries(m.headers ?? {}).map(([k, v]) => [k, Buffer.from(String(v))])),
  timestamp: '1700000000000',
});
const id = { topic: 'b.webhooks.dlq', partition: 0, offset: '7' };

describe('dead-letter records', () => {
  it('are the source record byte for byte, with the context in Kafka Connect-named headers', async () => {
    const encode = createDeadLetterEncoder('sink', () => 1_000_000, () => 1_700_000_000_123);
    const letter = deadLetterFor('b.snapshots.dlq', 'b.snapshots', 3, { offset: '42', key: Buffer.from('Order:1'), value: Buffer.from([0, 1, 2, 255]), headers: { trace: Buffer.from('abc') } }, 'version-conflict', 'version 4 differs');
    const [out] = encode([letter]);
    expect(out?.topic).toBe('b.snapshots.dlq');
    const m = out?.messages[0];
    expect(m?.key).toEqual(Buffer.from('Order:1'));
    expect(m?.value).toEqual(Buffer.from([0, 1, 2, 255]));
    expect(m?.headers).toMatchObject({
      '__connect.errors.topic': 'b.snapshots',
      '__connect.errors.partition': '3',
      '__connect.errors.offset': '42',
      '__connect.errors.stage': 'sink',
      '__connect.errors.exception.class.name': 'version-conflict',
      '__connect.errors.exception.message': 'version 4 differs',
      'billing_loader.dlq.failed_at': '1700000000123',
      trace: Buffer.from('abc'),
    });
    const read = await readDeadLetter(id, asMessage({ key: m?.key as Buffer, value: m?.value as Buffer, headers: m?.headers as Record<string, unknown> }), noDecode);
    expect(read).toMatchObject({ format: 'headers', stage: 'sink', errorClass: 'version-conflict', sourceTopic: 'b.snapshots', sourcePartition: 3, sourceOffset: '42', failedAt: 1_700_000_000_123, valueDroppedBytes: 0 });
    // The source record's own headers are told apart from the context.
    expect(Object.keys(read.headers)).toEqual(['trace']);
  });

  it('leave out a source value that would not fit the DLQ, and say how many bytes', () => {
    const encode = createDeadLetterEncoder('enricher', () => 16_384);
    const [out] = encode([deadLetterFor('d', 's', 0, { offset: '1', key: Buffer.from('k'), value: Buffer.alloc(20_000) }, 'snapshot-too-large', 'too big')]);
    expect(out?.messages[0]?.value).toBeNull();
    expect(out?.messages[0]?.headers?.[DEAD_LETTER_HEADERS.valueDropped]).toBe('20000');
  });

  it('are read in the earlier Avro-envelope format too, through the registry decoder', async () => {
    const envelope = { source_topic: 'b.webhooks', source_partition: 2, source_offset: 9, source_key: Buffer.from('k'), source_value: Buffer.from('raw'), stage: 'enricher', error_class: 'decode', error_message: 'bad', failed_at: 1_600_000_000_000 };
    const read = await readDeadLetter(id, asMessage({ key: 'k', value: Buffer.from([0, 0, 0, 0, 5, 1]) }), () => Promise.resolve(envelope));
    expect(read).toMatchObject({ format: 'envelope', stage: 'enricher', errorClass: 'decode', sourceTopic: 'b.webhooks', sourcePartition: 2, sourceOffset: '9', key: Buffer.from('k'), value: Buffer.from('raw'), failedAt: 1_600_000_000_000 });
  });

  it('that are neither format read as unknown, and an unreachable registry is thrown on', async () => {
    expect((await readDeadLetter(id, asMessage({ value: 'plain text' }), noDecode)).format).toBe('unknown');
    const badBytes = Object.assign(new Error('truncated buffer'), {});
    expect((await readDeadLetter(id, asMessage({ value: Buffer.from([0, 0, 0, 0, 5, 1]) }), () => Promise.reject(badBytes))).format).toBe('unknown');
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    await expect(readDeadLetter(id, asMessage({ value: Buffer.from([0, 0, 0, 0, 5, 1]) }), () => Promise.reject(down))).rejects.toThrow('ECONNREFUSED');
  });

  it('are named <topic>:<partition>:<offset>', () => {
    expect(formatLetterId(id)).toBe('b.webhooks.dlq:0:7');
    expect(parseLetterId('a:b.dlq:3:12')).toEqual({ topic: 'a:b.dlq', partition: 3, offset: '12' });
    expect(parseLetterId('b.dlq:x:1')).toBeUndefined();
  });
});
