import { createHash } from 'node:crypto';

/**
 * The content hash of a snapshot body: sha256 over its canonical JSON, where object keys are
 * lower-cased and sorted. Lower-casing is for comparison only (spec 9.3: the service may change
 * the letter case of property names without notice, which is not a change of content); the
 * stored body keeps the names as fetched.
 */
export function contentHash(bodyText: string): string {
  return valueHash(JSON.parse(bodyText));
}

/** contentHash of a body already parsed (the fetcher parses each body once). */
export function valueHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => [k.toLowerCase(), v] as const);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
