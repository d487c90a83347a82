import { DomainError } from '../../domain/errors';

/** Query-string readers; every bad value is INVALID_QUERY naming the parameter. */
type Q = Record<string, unknown>;

const bad = (name: string, what: string) => new DomainError('INVALID_QUERY', `${name} ${what}`, { parameter: name });

export function stringParam(q: Q, name: string): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(name, 'must be given once');
  if (v.length > 1024) throw bad(name, 'is too long');
  return v === '' ? undefined : v;
}

/** Comma-separated or repeated values, trimmed, empty ones dropped. */
export function listParam(q: Q, name: string): string[] {
  const v = q[name];
  if (v === undefined) return [];
  const values = Array.isArray(v) ? v : [v];
  if (!values.every((x) => typeof x === 'string')) throw bad(name, 'must be text');
  const out = (values as string[]).flatMap((x) => x.split(',')).map((x) => x.trim()).filter(Boolean);
  if (out.length > 64) throw bad(name, 'has too many values');
  return out;
}

export function intParam(q: Q, name: string, dflt: number, min: number, max: number): number {
  const v = stringParam(q, name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw bad(name, `must be a whole number from ${min} to ${max}`);
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
  return d;
}
