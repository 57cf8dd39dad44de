import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether a Content-Type header announces JSON the ingress can read: `application/json` or a
 * `+json` type, in UTF-8 (the only charset RFC 8259 allows between systems) when a charset is given.
 */
export function isJsonContentType(header: string | undefined): boolean {
  // What nearly every sender writes, answered without parsing (this runs for every webhook).
  if (header === 'application/json' || header === 'application/json; charset=utf-8') return true;
  if (!header) return false;
  const [mediaType = '', ...params] = header.split(';');
  const media = mediaType.trim().toLowerCase();
  if (media !== 'application/json' && !/^application\/[a-z0-9.!#$&^_-]+\+json$/.test(media)) return false;
  for (const param of params) {
    const [name = '', value = ''] = param.split('=').map((s) => s.trim().toLowerCase());
    if (name === 'charset' && !['utf-8', 'utf8', '"utf-8"', '"utf8"'].includes(value)) return false;
  }
  return true;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * A comparison of a request's token with the configured ones (several during a rotation), in
 * constant time. Both sides are hashed first, so the buffers timingSafeEqual compares always have
 * the same length and neither the tokens' characters nor their length leak through response
 * timing; every configured token is compared, so neither does which one matched.
 */
export function tokenMatcher(expected: readonly string[]): (given: string) => boolean {
  const expectedDigests = expected.map(digest);
  return (given) => {
    const givenDigest = digest(given);
    let matched = false;
    for (const d of expectedDigests) matched = timingSafeEqual(d, givenDigest) || matched;
    return matched;
  };
}
