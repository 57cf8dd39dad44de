/** What the enricher remembers of each resource it owns: its latest version. */
export interface Head {
  version: number;
  contentHash: string;
  deleted: boolean;
}

export type FetchOutcome = { kind: 'found'; contentHash: string } | { kind: 'gone' };

export const DELETED_HASH = 'deleted';

/**
 * The next version of a resource, if the fetched state makes one (docs/CONTRACT.md property 3):
 * - found, and never seen or different from the head (or the head is a deletion): head + 1;
 * - found with the head's content: nothing (duplicates, late and reordered webhooks end here);
 * - gone after having existed: one deleted version; gone again, or never seen: nothing (a
 *   forged or mistyped id creates no version).
 */
export function nextVersion(head: Head | undefined, outcome: FetchOutcome): Head | undefined {
  const version = (head?.version ?? 0) + 1;
  if (outcome.kind === 'found') {
    if (head && !head.deleted && head.contentHash === outcome.contentHash) return undefined;
    return { version, contentHash: outcome.contentHash, deleted: false };
  }
  if (!head || head.deleted) return undefined;
  return { version, contentHash: DELETED_HASH, deleted: true };
}
