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
