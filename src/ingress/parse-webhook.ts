import { EVENT_FIELD, MAX_FIELD_LENGTH, knownField, type WebhookField } from '../wire/webhook-fields.js';
import type { ParsedWebhook } from '../wire/webhook-record.js';

/** A webhook body that passed validation: what the record carries besides the body itself. */
export type { ParsedWebhook };

export type ParseResult = { ok: true; webhook: ParsedWebhook } | { ok: false; error: string };

// C0 controls, DEL and C1 controls: never part of an identifier, and a classic vehicle for log
// injection and path tricks downstream (docs/CONTRACT.md property 8).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Deepest nesting of objects and arrays accepted. Upstream webhooks are flat (spec 6.1: Event and
 * identifiers); a deeply nested unknown field is hostile, and a few thousand levels overflow the
 * stack when the record is built here (a 500) or PostgreSQL's jsonb parser in the sink (SQLSTATE
 * 54001, which the sink would retry forever). Found by test/integration/bad-input-sweep.test.ts.
 */
export const MAX_NESTING_DEPTH = 64;

// A lone UTF-16 surrogate (from a `\ud800` escape) has no UTF-8 form: the record would carry
// U+FFFD replacement characters instead, and the enricher would fetch an id that is not the one
// received (docs/CONTRACT.md property 8). With the u flag, a valid pair is one code point and does not match.
const LONE_SURROGATE = /\p{Cs}/u;

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * Validates a webhook body (text already decoded as UTF-8). Only what the loader needs can fail:
 * a JSON object, a usable string Event and usable resource identifiers. Pure: the same text
 * always gives the same answer; every failure is a 400 with `error`.
 */
export function parseWebhook(text: string): ParseResult {
  let value: unknown;
  try {
    // A leading byte order mark is not JSON, but it says nothing wrong about the content.
    value = JSON.parse(text.startsWith('\uFEFF') ? text.slice(1) : text);
  } catch {
    return fail('body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(`body must be a JSON object, got ${describe(value)}`);
  }
  if (nestingDepth(text) > MAX_NESTING_DEPTH) return fail(`body is nested deeper than ${MAX_NESTING_DEPTH} levels`);

  let event: string | undefined;
  const fields: Record<string, string | number> = {};
  const extra: [string, unknown][] = [];
  for (const [name, fieldValue] of Object.entries(value)) {
    if (name.toLowerCase() === EVENT_FIELD.toLowerCase()) {
      const problem = checkString(EVENT_FIELD, fieldValue, true);
      if (problem) return fail(problem);
      if (event !== undefined && event !== fieldValue) return fail(conflict(EVENT_FIELD));
      event = fieldValue as string;
      continue;
    }
    const field = knownField(name);
    if (!field) {
      extra.push([name, fieldValue]);
      continue;
    }
    if (field.kind === 'id') {
      // A deprecated id the upstream left empty names nothing to fetch; refusing it would lose the event.
      if (field.deprecated && (fieldValue === null || fieldValue === '')) {
        extra.push([name, fieldValue]);
        continue;
      }
      const problem = checkString(field.name, fieldValue, true);
      if (problem) return fail(problem);
      const previous = fields[field.avro];
      if (previous !== undefined && previous !== fieldValue) return fail(conflict(field.name));
      fields[field.avro] = fieldValue as string;
      continue;
    }
    // The loader never reads this field: whatever its value, it is kept, never a reason to refuse.
    const previous = fields[field.avro];
    if (previous === undefined && fitsField(field, fieldValue)) fields[field.avro] = fieldValue as string | number;
    else if (previous !== fieldValue) extra.push([name, fieldValue]);
  }
  if (event === undefined) return fail(`missing field ${EVENT_FIELD}`);
  // fromEntries defines own properties, so a field named "__proto__" stays a plain field.
  return { ok: true, webhook: { event, fields, extra: Object.fromEntries(extra) } };
}

/** Deepest nesting of `{` and `[` outside strings, in text already known to be valid JSON (iterative: no stack to overflow). */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

/** Whether a value of a field the loader does not read fits the field's Avro type unchanged. */
function fitsField(field: WebhookField, value: unknown): boolean {
  if (field.kind === 'int') return typeof value === 'number' && Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX;
  // Avro writes strings as UTF-8, which has no form for a lone surrogate; extra_fields is JSON, which keeps it escaped.
  return typeof value === 'string' && !LONE_SURROGATE.test(value);
}

function checkString(name: string, value: unknown, nonEmpty: boolean): string | undefined {
  if (typeof value !== 'string') return `${name} must be a string, got ${describe(value)}`;
  // An empty identifier would address a collection, not a resource.
  if (nonEmpty && value.length === 0) return `${name} must not be empty`;
  if (value.length > MAX_FIELD_LENGTH) return `${name} is longer than ${MAX_FIELD_LENGTH} characters`;
  if (CONTROL_CHARACTERS.test(value)) return `${name} contains control characters`;
  if (LONE_SURROGATE.test(value)) return `${name} is not valid Unicode (a lone surrogate)`;
  return undefined;
}

function conflict(name: string): string {
  return `${name} appears more than once (in different letter case) with different values`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isInteger(value)) return `the number ${value}`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function fail(error: string): ParseResult {
  return { ok: false, error };
}
