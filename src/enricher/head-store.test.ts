import { describe, expect, it } from 'vitest';
import { decodeHead, encodeHead, type StoredHead } from './head-store.js';

const head: StoredHead = { version: 4, contentHash: 'h4', deleted: false, fetchedAt: 1_700_000_000_000, customerId: 'cu1', escalationProcessIds: ['p1'] };
const json = (value: Record<string, unknown>) => Buffer.from(JSON.stringify(value));

describe('head formats', () => {
  it('writes format 1 and reads it back', () => {
    expect(JSON.parse(encodeHead(head).toString())).toMatchObject({ v: 1 });
    expect(decodeHead(encodeHead(head))).toEqual(head);
  });

  it('reads a newer head that declares format 1 readers enough, with the fields it knows', () => {
    expect(decodeHead(json({ v: 2, readableFrom: 1, ...head, etag: 'W/"4"' }))).toEqual(head);
  });

  it('refuses a head only a newer reader can act on', () => {
    expect(() => decodeHead(json({ v: 2, readableFrom: 2, ...head }))).toThrow('head format 2 needs a reader of format 2 or later; this one reads up to 1');
  });
});
