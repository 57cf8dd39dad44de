/**
 * A contract's reference to its customer (spec 2): the top-level `CustomerId` property of the
 * parsed body, its name matched in any letter case (spec 9.3); a number is taken as its decimal
 * text. The one place this rule lives: the enricher follows it, the sink stores it.
 */
export function customerReference(parsed: unknown): string | undefined {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  for (const [key, value] of Object.entries(parsed)) {
    if (key.toLowerCase() !== 'customerid') continue;
    if (typeof value === 'string' && value !== '') return value;
    if (typeof value === 'number') return String(value);
  }
  return undefined;
}
