import type { TSchema } from '@sinclair/typebox';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { DomainError, type ErrorCode } from '../../domain/errors';

/**
 * The one validator of the schemas in this folder (ajv compiles each schema once, on first use). A refusal names the
 * field as the client spelt it (`filter.includeTags`, `preview_id`) and says what the value must be: the schema's
 * `x-message` where it has one, else a sentence made from the failed keyword. Its code is INVALID_BODY, or the
 * schema's `x-code` for a refused `pattern` (a download's URL scheme is SOURCE_NOT_ALLOWED, as the domain answers it).
 * `x-component` names the openapi.yaml component a field schema is published as (openapi.ts).
 */
const ajv = new Ajv({ allErrors: false, verbose: true, strict: true, strictTypes: false, allowUnionTypes: true });
addFormats(ajv, ['uuid', 'uri']);
ajv.addVocabulary(['x-message', 'x-code', 'x-component']);

const compiled = new WeakMap<TSchema, ValidateFunction>();

export function validatorOf(schema: TSchema): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

/** What a value of `type` is, in a refusal's words. */
const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  array: 'a list',
  object: 'a JSON object',
  null: 'null',
};

function sentence(e: ErrorObject): string {
  const s = (e.parentSchema ?? {}) as Record<string, unknown>;
  const p = e.params as Record<string, unknown>;
  if (typeof s['x-message'] === 'string' && e.keyword !== 'required' && e.keyword !== 'type') return s['x-message'];
  switch (e.keyword) {
    case 'type': {
      const types = ([] as string[]).concat(p.type as string | string[]);
      return `must be ${types.map((t) => TYPE_WORDS[t] ?? t).join(' or ')}`;
    }
    case 'minimum':
    case 'maximum':
      return typeof s.minimum === 'number' && typeof s.maximum === 'number'
        ? `must be from ${s.minimum} to ${s.maximum}`
        : `must be ${e.keyword === 'minimum' ? 'at least' : 'at most'} ${String(p.limit)}`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`;
    case 'maxItems':
      return `must hold at most ${String(p.limit)} items`;
    case 'minItems':
      return `must hold at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).join(', ')}`;
    default:
      return e.message ?? 'is not valid';
  }
}

/** `/filter/includeTags/3` as `filter.includeTags[3]`, under `prefix` (the argument's name) when given. */
function fieldOf(e: ErrorObject, prefix?: string): string {
  const parts = e.instancePath.split('/').slice(1);
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty));
  let at = prefix ?? '';
  for (const part of parts) at += /^\d+$/.test(part) ? `[${part}]` : at === '' ? part : `.${part}`;
  return at || 'body';
}

/** The refusal of the first failed rule. */
function refusal(errors: ErrorObject[], prefix?: string): DomainError {
  // An anyOf's own error comes after its branches': it says what the whole value must be.
  const e = errors[errors.length - 1]!;
  const field = fieldOf(e, prefix);
  const s = (e.parentSchema ?? {}) as Record<string, unknown>;
  const code: ErrorCode =
    e.keyword === 'pattern' && typeof s['x-code'] === 'string' ? (s['x-code'] as ErrorCode) : 'INVALID_BODY';
  const message = e.keyword === 'required' ? `${field} is required` : `${field} ${sentence(e)}`;
  return new DomainError(code, message, { field });
}

/** Throws the refusal when `value` does not match `schema`; `prefix` names the value itself (GraphQL's argument). */
export function check(schema: TSchema, value: unknown, prefix?: string): void {
  const v = validatorOf(schema);
  if (!v(value)) throw refusal(v.errors ?? [], prefix);
}

/**
 * A JSON body whose `null` fields count as absent (the create routes', as GraphQL's nullable arguments): checked
 * without them. The PUT body keeps its nulls (`preview_id: null` clears): check it with `check`.
 */
export function checkBody(schema: TSchema, body: unknown): void {
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    let copy: Record<string, unknown> | undefined;
    for (const k in body as Record<string, unknown>) {
      if ((body as Record<string, unknown>)[k] !== null) continue;
      copy ??= { ...(body as Record<string, unknown>) };
      delete copy[k];
    }
    if (copy) return check(schema, copy);
  }
  check(schema, body);
}
