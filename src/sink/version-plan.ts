import type { SnapshotRow } from './records.js';

/** The newest stored version of one resource. */
export interface Head {
  version: number;
  contentHash: string;
}

/** A snapshot the sink will not write, with the dead-letter class saying why. */
export interface Refusal {
  row: SnapshotRow;
  errorClass: 'duplicate-content' | 'version-conflict';
  message: string;
}

export interface VersionPlan {
  /** Rows to append, in arrival order. */
  insert: SnapshotRow[];
  /** Records whose version is already stored with the same content: a replay, a no-op. */
  alreadyStored: number;
  /** Written anyway, but the version is not the stored maximum + 1 (an upstream bug; counted and logged). */
  gaps: { row: SnapshotRow; expected: number }[];
  /** Written, but below the stored maximum where no row existed (a late record filling an earlier gap). */
  lateFills: SnapshotRow[];
  refused: Refusal[];
}

export const resourceKey = (type: string, id: string): string => `${type}\u0000${id}`;
const versionKey = (type: string, id: string, version: number): string => `${type}\u0000${id}\u0000${version}`;

/**
 * Decides, for a batch of snapshots in log order, which rows to append. Pure: the database
 * answers `heads` (the newest stored version per resource in the batch) and `stored` (the hash
 * of every stored version at or below its head that the batch mentions), and this function
 * applies docs/CONTRACT.md property 3 to them:
 *
 * - a version already stored with the same hash is a replay: skipped (this is what makes
 *   replaying the log a no-op, beside the primary key);
 * - a version already stored with another hash is a conflict (two writers disagreed upstream):
 *   never overwritten, refused to the DLQ so the evidence is kept;
 * - a version whose content equals the previous version's is refused: two consecutive rows of
 *   one resource never have the same content;
 * - a version that skips numbers is written anyway: it is a real state fetched from the API, and
 *   refusing it would also refuse every later version of that resource. The gap is reported.
 */
export function planVersions(rows: readonly SnapshotRow[], heads: ReadonlyMap<string, Head>, stored: ReadonlyMap<string, string>): VersionPlan {
  const plan: VersionPlan = { insert: [], alreadyStored: 0, gaps: [], lateFills: [], refused: [] };
  const current = new Map<string, Head>();
  const known = new Map<string, string>();
  for (const row of rows) {
    const key = resourceKey(row.resourceType, row.resourceId);
    const vkey = versionKey(row.resourceType, row.resourceId, row.version);
    const head = current.get(key) ?? heads.get(key);
    const existing = known.get(vkey) ?? stored.get(vkey);
    if (existing !== undefined) {
      if (existing === row.contentHash) plan.alreadyStored++;
      else plan.refused.push({ row, errorClass: 'version-conflict', message: `version ${row.version} is already stored with content ${existing}, this record has ${row.contentHash}` });
      continue;
    }
    if (head && row.version <= head.version) {
      // Below the newest stored version, and absent: an earlier gap being filled late.
      plan.lateFills.push(row);
      plan.insert.push(row);
      known.set(vkey, row.contentHash);
      continue;
    }
    if (head && head.contentHash === row.contentHash) {
      plan.refused.push({ row, errorClass: 'duplicate-content', message: `version ${row.version} has the same content as version ${head.version} (${row.contentHash})` });
      continue;
    }
    const expected = (head?.version ?? 0) + 1;
    if (row.version !== expected) plan.gaps.push({ row, expected });
    plan.insert.push(row);
    known.set(vkey, row.contentHash);
    current.set(key, { version: row.version, contentHash: row.contentHash });
  }
  return plan;
}

/** The versions whose stored hash the planner needs: those at or below the resource's head. */
export function versionsToLookUp(rows: readonly SnapshotRow[], heads: ReadonlyMap<string, Head>): SnapshotRow[] {
  return rows.filter((r) => {
    const head = heads.get(resourceKey(r.resourceType, r.resourceId));
    return head !== undefined && r.version <= head.version;
  });
}

export { versionKey };
