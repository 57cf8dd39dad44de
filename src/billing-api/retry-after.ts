/**
 * Reads a Retry-After header (RFC 9110 10.2.3): delay-seconds or an HTTP-date. Returns the
 * wait in milliseconds (0 for a date in the past), or undefined when the header is absent or
 * unreadable, so the caller falls back to its own backoff rather than trusting garbage.
 */
export function parseRetryAfterMs(header: string | string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) {
    const seconds = Number(value);
    return Number.isSafeInteger(seconds) ? seconds * 1000 : undefined;
  }
  // Only HTTP-date forms: Date.parse alone would accept "5.5" or "2025" as dates.
  if (!/^[A-Za-z]{3,9},? /.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
