import { describe, expect, it } from 'vitest';
import type { SnapshotRow } from './records.js';
import { planVersions, resourceKey, versionKey, versionsToLookUp, type Head } from './version-plan.js';

let offset = 0;
const row = (id: string, version: number, hash: string): SnapshotRow => ({
  resourceType: 'Contract',
  resourceId: id,
  version,
  fetchedAtMs: version,
  deleted: false,
  body: '{}',
  contentHash: hash,
  sourceEventIds: [],
  sourceEvents: [],
  customerId: null,
  coordinates: { topic: 't', partition: 0, offset: String(offset++) },
});
const heads = (entries: [string, Head][]) => new Map(entries.map(([id, h]) => [resourceKey('Contract', id), h]));

describe('planVersions', () => {
  it('appends consecutive versions of new resources', () => {
    const plan = planVersions([row('a', 1, 'x'), row('a', 2, 'y'), row('b', 1, 'x')], new Map(), new Map());
    expect(plan.insert.map((r) => [r.resourceId, r.version])).toEqual([['a', 1], ['a', 2], ['b', 1]]);
    expect(plan.gaps).toEqual([]);
    expect(plan.refused).toEqual([]);
  });

  it('continues from the stored head', () => {
    const plan = planVersions([row('a', 4, 'z')], heads([['a', { version: 3, contentHash: 'y' }]]), new Map());
    expect(plan.insert).toHaveLength(1);
    expect(plan.gaps).toEqual([]);
  });

  it('skips a stored version with the same hash and refuses one with another hash', () => {
    const stored = new Map([[versionKey('Contract', 'a', 2), 'y']]);
    const plan = planVersions([row('a', 2, 'y'), row('a', 2, 'other')], heads([['a', { version: 3, contentHash: 'z' }]]), stored);
    expect(plan.insert).toEqual([]);
    expect(plan.alreadyStored).toBe(1);
    expect(plan.refused.map((r) => r.errorClass)).toEqual(['version-conflict']);
  });

  it('skips a version repeated inside the batch', () => {
    const plan = planVersions([row('a', 1, 'x'), row('a', 1, 'x')], new Map(), new Map());
    expect(plan.insert).toHaveLength(1);
    expect(plan.alreadyStored).toBe(1);
  });

  it('refuses a version whose content equals the previous one, stored or in the batch', () => {
    const fromHead = planVersions([row('a', 4, 'y')], heads([['a', { version: 3, contentHash: 'y' }]]), new Map());
    expect(fromHead.refused.map((r) => r.errorClass)).toEqual(['duplicate-content']);
    const inBatch = planVersions([row('a', 1, 'x'), row('a', 2, 'x'), row('a', 3, 'w')], new Map(), new Map());
    expect(inBatch.refused.map((r) => [r.errorClass, r.row.version])).toEqual([['duplicate-content', 2]]);
    // Version 3 follows the refused 2: written, and reported as a gap.
    expect(inBatch.insert.map((r) => r.version)).toEqual([1, 3]);
    expect(inBatch.gaps.map((g) => [g.row.version, g.expected])).toEqual([[3, 2]]);
  });

  it('writes a gap and reports it; a late missing version below the head fills it', () => {
    const plan = planVersions([row('a', 5, 'q')], heads([['a', { version: 3, contentHash: 'y' }]]), new Map());
    expect(plan.insert).toHaveLength(1);
    expect(plan.gaps.map((g) => g.expected)).toEqual([4]);
    const late = planVersions([row('a', 4, 'p')], heads([['a', { version: 5, contentHash: 'q' }]]), new Map());
    expect(late.insert).toHaveLength(1);
    expect(late.lateFills).toHaveLength(1);
  });

  it('asks the database only for versions at or below the head', () => {
    const rows = [row('a', 2, 'x'), row('a', 4, 'x'), row('b', 1, 'x')];
    expect(versionsToLookUp(rows, heads([['a', { version: 3, contentHash: 'y' }]])).map((r) => r.version)).toEqual([2]);
  });
});
