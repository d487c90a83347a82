import { DomainError, type ErrorCode } from './errors';

/**
 * The rules every text and JSON input obeys, whatever the route or transport: no NUL (PostgreSQL
 * refuses it in text and jsonb), no unpaired UTF-16 surrogate (it cannot be encoded as UTF-8), JSON nested at most
 * 64 levels, media types of RFC 9110, dates in the years 0001–9999. REST query readers, JSON bodies, multipart
 * fields, the field validators and the GraphQL argument check all call these, so a new parameter gets the same
 * protection by going through them.
 */
export const MAX_JSON_DEPTH = 64;

export type InputErrorCode = Extract<ErrorCode, 'INVALID_BODY' | 'INVALID_QUERY'>;

// Written with \u escapes and without the `u` flag: a lone surrogate is one code unit here.
const NUL_OR_LONE_SURROGATE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether the text can be stored and sent back: no NUL, no unpaired surrogate. */
export const isStorableText = (s: string): boolean => !NUL_OR_LONE_SURROGATE.test(s);

const refused = (code: InputErrorCode, where: string, what: string) =>
  new DomainError(code, `${where} ${what}`, code === 'INVALID_QUERY' ? { parameter: where } : { field: where });

export function assertStorableText(value: string, where: string, code: InputErrorCode = 'INVALID_BODY'): string {
  if (!isStorableText(value))
    throw refused(code, where, 'must not contain NUL characters or unpaired UTF-16 surrogates');
  return value;
}

/**
 * `s` without its trailing run of the characters in `chars`. A loop, not `/[…]+$/`: an unanchored run before `$` is
 * tried again from every position of a long run that is not at the end (quadratic time).
 */
export function trimEnd(s: string, chars: string): string {
  let end = s.length;
  while (end > 0 && chars.includes(s[end - 1]!)) end--;
  return s.slice(0, end);
}

/** The longest idempotency key (the unique index on owner and key holds it). */
export const MAX_IDEMPOTENCY_KEY = 255;

/**
 * A task's idempotency key (the `Idempotency-Key` header, GraphQL's `idempotencyKey`), the same for every task kind:
 * storable text, trimmed, at most 255 characters (longer does not fit the unique index); blank is none.
 */
export function idempotencyKeyOf(raw: string | null | undefined): string | null {
  if (raw == null) return null;
  const key = assertStorableText(raw, 'idempotency_key').trim();
  if (key.length > MAX_IDEMPOTENCY_KEY) {
    throw new DomainError('INVALID_BODY', `the idempotency key is longer than ${MAX_IDEMPOTENCY_KEY} characters`, {
      field: 'idempotency_key',
    });
  }
  return key || null;
}

/**
 * Checks a parsed JSON value (or any plain data: GraphQL arguments) without recursion, so a value nested 10,000 levels
 * is refused as fast as a flat one: at most `maxDepth` levels of objects and arrays, and every string, key included,
 * storable text. A scalar is depth 0, `{}` or `[]` depth 1. Dates (GraphQL arguments) must lie in the years
 * 0001–9999; promises (GraphQL uploads) are left alone.
 */
export function assertJsonInput(
  value: unknown,
  where: string,
  code: InputErrorCode = 'INVALID_BODY',
  maxDepth = MAX_JSON_DEPTH,
): void {
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (typeof v === 'string') {
      assertStorableText(v, where, code);
      continue;
    }
    if (v instanceof Date) {
      assertQueryDate(v, where, code);
      continue;
    }
    if (v === null || typeof v !== 'object' || typeof (v as { then?: unknown }).then === 'function') continue;
    if (depth + 1 > maxDepth)
      throw refused(code, where, `must not nest JSON values more than ${MAX_JSON_DEPTH} levels deep`);
    if (Array.isArray(v)) {
      for (const item of v) stack.push({ v: item, depth: depth + 1 });
    } else {
      for (const [k, item] of Object.entries(v)) {
        assertStorableText(k, where, code);
        stack.push({ v: item, depth: depth + 1 });
      }
    }
  }
}

/** A JSON object (not an array or a scalar) obeying `assertJsonInput`. */
export function assertJsonObject(
  value: unknown,
  where: string,
  code: InputErrorCode = 'INVALID_BODY',
): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw refused(code, where, 'must be a JSON object');
  assertJsonInput(value, where, code);
  return value as Record<string, unknown>;
}

// RFC 9110 section 5.6.2 token, 5.6.4 quoted-string (printable ASCII only: no obs-text), 8.3.1 media-type.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\t \\x21-\\x7e])*"';
/**
 * A media type's pattern, without anchors: this check's and the input schemas' (http/schema/fields.ts). Each part
 * can match a given text in one way only (white space before a `;` belongs to that `;`, white space after it only to
 * the parameter that follows), so a refused value costs time linear in its length: the earlier
 * `[ \t]*;[ \t]*(param)?` let runs of blanks between empty parameters split in exponentially many ways.
 */
export const MEDIA_TYPE_SOURCE = `${TOKEN}/${TOKEN}(?:[ \\t]*;(?:[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*`;
const MEDIA_TYPE = new RegExp(`^${MEDIA_TYPE_SOURCE}$`);

/** An RFC 9110 media type: `type/subtype` tokens, parameters as token or quoted printable ASCII. */
export const isMediaType = (s: string): boolean => MEDIA_TYPE.test(s);

/** What to send as Content-Type for a stored value: the value when it is a media type, else octet-stream. */
export const servableMediaType = (s: string): string => (isMediaType(s) ? s : 'application/octet-stream');

/** 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z (Date.UTC would read year 1 as 1901). */
const YEAR_ONE = -62_135_596_800_000;
const YEAR_10000 = 253_402_300_800_000;

/** A date a query can hold: in the years 0001–9999 (PostgreSQL and ISO 8601's four-digit years). */
export function assertQueryDate(d: Date, where: string, code: InputErrorCode = 'INVALID_QUERY'): Date {
  const t = d.getTime();
  if (Number.isNaN(t) || t < YEAR_ONE || t >= YEAR_10000)
    throw refused(code, where, 'must be a date in the years 0001–9999');
  return d;
}
