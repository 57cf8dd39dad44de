/** The query parameters of the dashboard's JSON endpoints, checked before any SQL sees them. */

/** A parameter the client got wrong: answered 400 with this message. */
export class BadParameter extends Error {
  constructor(readonly parameter: string, message: string) {
    super(`${parameter}: ${message}`);
  }
}

export interface DayRange {
  /** First day, YYYY-MM-DD, inclusive. */
  from: string;
  /** Last day, YYYY-MM-DD, inclusive. */
  to: string;
}

/** Longest range a time chart accepts: ten years of days keeps every answer a few thousand points. */
export const MAX_RANGE_DAYS = 3660;

/** A calendar day as YYYY-MM-DD; `2025-02-30` is refused, not rolled over to March. */
export function parseDay(parameter: string, raw: unknown): string {
  if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(raw)) throw new BadParameter(parameter, `expected a date YYYY-MM-DD, got ${JSON.stringify(raw ?? null)}`);
  const d = new Date(`${raw}T00:00:00Z`);
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== raw) throw new BadParameter(parameter, `no such day: ${raw}`);
  return raw;
}

/** `from` and `to` of a time chart, both given, in order and at most MAX_RANGE_DAYS apart. */
export function parseDayRange(query: Record<string, unknown>): DayRange {
  const from = parseDay('from', query.from);
  const to = parseDay('to', query.to);
  if (from > to) throw new BadParameter('to', `must not be before from (${from}), got ${to}`);
  const days = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1;
  if (days > MAX_RANGE_DAYS) throw new BadParameter('to', `at most ${MAX_RANGE_DAYS} days after from, got ${days}`);
  return { from, to };
}

/** A resource id as the billing service issues them; anything else never reaches SQL. */
export function parseResourceId(raw: unknown): string {
  if (typeof raw !== 'string' || !/^[A-Za-z0-9._~:-]{1,128}$/.test(raw)) {
    throw new BadParameter('id', `expected a contract or customer id (1-128 letters, digits, '.', '_', '~', ':' or '-'), got ${JSON.stringify(raw ?? null)}`);
  }
  return raw;
}

/** Longest customer search text: a name, an e-mail address or an external id. */
export const MAX_SEARCH_LENGTH = 100;

/** The text of a customer search: one non-blank string of at most MAX_SEARCH_LENGTH characters, trimmed. */
export function parseSearchText(raw: unknown): string {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (text.length === 0 || text.length > MAX_SEARCH_LENGTH) {
    throw new BadParameter('q', `expected a name, e-mail address or external id of 1-${MAX_SEARCH_LENGTH} characters, got ${JSON.stringify(raw ?? null)}`);
  }
  return text;
}

/** The currency of the revenue figures: a three-letter code, or `reporting` (every currency through fx_rates): null. */
export function parseCurrency(raw: unknown): string | null {
  if (raw === 'reporting') return null;
  if (typeof raw !== 'string' || !/^[A-Z]{3}$/.test(raw)) throw new BadParameter('currency', `expected a currency code such as EUR, or reporting, got ${JSON.stringify(raw ?? null)}`);
  return raw;
}
