import { DomainError } from '../../domain/errors';
import { assertJsonObject, assertQueryDate, assertStorableText } from '../../domain/input';
import { longerThan } from '../../domain/text-length';

/**
 * Query-string readers; every bad value is INVALID_QUERY naming the parameter. Every value read goes through
 * `texts` (no NUL, no unpaired surrogate), JSON values through `jsonParam` (the same check at any depth, keys
 * included, and the nesting limit), dates through `dateParam` (years 0001–9999): a new parameter read with these gets
 * the service's input rules (domain/input.ts) without more code.
 */
type Q = Record<string, unknown>;

const bad = (name: string, what: string) => new DomainError('INVALID_QUERY', `${name} ${what}`, { parameter: name });

/** The values of a parameter, each checked to be storable text. */
function texts(q: Q, name: string): string[] | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  const values = Array.isArray(v) ? v : [v];
  for (const x of values) {
    if (typeof x !== 'string') throw bad(name, 'must be text');
    assertStorableText(x, name, 'INVALID_QUERY');
  }
  return values as string[];
}

/**
 * One text value, at most `maxLength` characters (1024, as openapi.yaml says of every text parameter but `after`),
 * counted in code points as the document's `maxLength` counts them.
 */
export function stringParam(q: Q, name: string, maxLength = 1024): string | undefined {
  const values = texts(q, name);
  if (values === undefined) return undefined;
  if (values.length !== 1) throw bad(name, 'must be given once');
  const v = values[0]!;
  if (longerThan(v, maxLength)) throw bad(name, `is longer than ${maxLength} characters`);
  return v === '' ? undefined : v;
}

/** Comma-separated or repeated values, trimmed, empty ones dropped; more than `max` is INVALID_QUERY. */
export function listParam(q: Q, name: string, max = 64): string[] {
  const values = texts(q, name);
  if (values === undefined) return [];
  const out = values
    .flatMap((x) => x.split(','))
    .map((x) => x.trim())
    .filter(Boolean);
  if (out.length > max) throw bad(name, 'has too many values');
  return out;
}

/** A JSON object given as text (at most 1024 characters, like every text parameter). */
export function jsonObjectParam(q: Q, name: string): Record<string, unknown> | undefined {
  const text = stringParam(q, name);
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad(name, 'must be a JSON object');
  }
  return assertJsonObject(value, name, 'INVALID_QUERY');
}

export function intParam(q: Q, name: string, dflt: number, min: number, max: number): number {
  const v = stringParam(q, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max)
    throw bad(name, `must be a whole number from ${min} to ${max}`);
  return Number(v);
}

export function oneOf<T extends string>(q: Q, name: string, allowed: readonly T[], dflt: T): T {
  const v = stringParam(q, name);
  if (v === undefined) return dflt;
  if (!allowed.includes(v as T)) throw bad(name, `must be one of ${allowed.join(', ')}`);
  return v as T;
}

export function dateParam(q: Q, name: string): Date | undefined {
  const v = stringParam(q, name);
  if (v === undefined) return undefined;
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw bad(name, 'must be an ISO 8601 date-time');
  return assertQueryDate(d, name);
}
