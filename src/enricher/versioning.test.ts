import { describe, expect, it } from 'vitest';
import { nextVersion } from './versioning.js';

const found = (h: string) => ({ kind: 'found' as const, contentHash: h });
const gone = { kind: 'gone' as const };

describe('nextVersion', () => {
  it('starts at version 1', () => {
    expect(nextVersion(undefined, found('a'))).toEqual({ version: 1, contentHash: 'a', deleted: false });
  });
  it('makes no version for unchanged content', () => {
    expect(nextVersion({ version: 3, contentHash: 'a', deleted: false }, found('a'))).toBeUndefined();
  });
  it('makes the next version for changed content, gap-free', () => {
    expect(nextVersion({ version: 3, contentHash: 'a', deleted: false }, found('b'))).toEqual({ version: 4, contentHash: 'b', deleted: false });
  });
  it('records one deletion, and only one', () => {
    const deleted = nextVersion({ version: 2, contentHash: 'a', deleted: false }, gone);
    expect(deleted).toEqual({ version: 3, contentHash: 'deleted', deleted: true });
    expect(nextVersion(deleted, gone)).toBeUndefined();
  });
  it('never versions a resource that never existed (forged or mistyped id)', () => {
    expect(nextVersion(undefined, gone)).toBeUndefined();
  });
  it('versions a resource that reappears after deletion, even with its old content', () => {
    expect(nextVersion({ version: 3, contentHash: 'deleted', deleted: true }, found('a'))).toEqual({ version: 4, contentHash: 'a', deleted: false });
  });
});
