import { getNullableType, isInputObjectType, isListType, type GraphQLArgument, type GraphQLInputType } from 'graphql';
import type { MiddlewareFn } from 'type-graphql';
import { assertJsonInput, MAX_JSON_DEPTH } from '../../domain/input';
import { DomainError } from '../../domain/errors';
import type { GraphQLContext } from './context';
import { toGraphQLError } from './errors';

/**
 * The contract's input rules for every argument of every resolver, variables and literals alike, before it runs:
 * no NUL or unpaired surrogate in any string or key, JSON values nested at most 64 levels (plus the input objects
 * around them), dates in the years 0001–9999. Refusals are INVALID_BODY, as for every other invalid argument of a
 * GraphQL request (its arguments travel in the request body, queries' too). Each argument's schema then applies
 * its fields' rules (http/schema/graphql.ts, the same field schemas as REST's bodies).
 */
export function checkInput(args: Record<string, unknown>): void {
  for (const name in args) assertJsonInput(args[name], name, 'INVALID_BODY', MAX_JSON_DEPTH + INPUT_OBJECT_LEVELS);
}

/** An argument's input object and a filter/input object inside it. */
const INPUT_OBJECT_LEVELS = 2;

/**
 * The `@Extensions` of an input type whose fields' `null` is a value the domain reads (UpdateAssetInput, as the PUT
 * body: `previewId: null` clears the preview, `name: null` is refused), so nullsAsAbsent keeps it there.
 */
export const NULL_IS_A_VALUE = { nullIsAValue: true } as const;

/**
 * GraphQL lets a client send `null` for any nullable argument or input field, literally or through a variable, and a
 * resolver's parameter default does not apply to it. So `null` is absent, decided here once from the schema for every
 * operation instead of by each resolver: the arguments without their null values, at any depth of input objects
 * (JSON scalars are values, left as they are). A `null` item of a list is refused (INVALID_BODY): dropping it would
 * change the list. Input types marked NULL_IS_A_VALUE keep their fields' nulls. `args` itself when there is nothing
 * to remove.
 */
export function nullsAsAbsent(
  args: Record<string, unknown>,
  defs: readonly GraphQLArgument[],
): Record<string, unknown> {
  let out = args;
  for (const def of defs) {
    const value = args[def.name];
    if (value === undefined) continue;
    const kept = value === null ? undefined : inputValue(value, def.type, def.name);
    if (kept !== value) out = replaced(out, args, def.name, kept);
  }
  return out;
}

function inputValue(value: unknown, type: GraphQLInputType, at: string): unknown {
  const t = getNullableType(type);
  if (isListType(t) && Array.isArray(value)) {
    let out: unknown[] = value;
    for (let i = 0; i < value.length; i++) {
      if (value[i] === null) throw new DomainError('INVALID_BODY', `${at} must not hold null`, { field: at });
      const kept = inputValue(value[i], t.ofType, at);
      if (kept === value[i]) continue;
      if (out === value) out = [...value];
      out[i] = kept;
    }
    return out;
  }
  if (!isInputObjectType(t) || value === null || typeof value !== 'object') return value;
  const fields = t.getFields();
  const keepNull = t.extensions.nullIsAValue === true;
  const object = value as Record<string, unknown>;
  let out = object;
  for (const name in object) {
    const field = fields[name];
    const v = object[name];
    if (!field || v === undefined || (v === null && keepNull)) continue;
    const kept = v === null ? undefined : inputValue(v, field.type, `${at}.${name}`);
    if (kept !== v) out = replaced(out, object, name, kept);
  }
  return out;
}

/** `out` (a copy of `original` once anything changed) with `name` set to `value`, or without it for undefined. */
function replaced(
  out: Record<string, unknown>,
  original: Record<string, unknown>,
  name: string,
  value: unknown,
): Record<string, unknown> {
  const copy = out === original ? { ...original } : out;
  if (value === undefined) delete copy[name];
  else copy[name] = value;
  return copy;
}

/**
 * The middleware of every query and mutation that takes input: nulls as absent and checkInput, then the resolver
 * (which reads the arguments it is given here), with any error of either translated by toGraphQLError (errors.ts).
 * One middleware, not several in a row: each level of type-graphql's middleware chain is two more async functions
 * per operation.
 */
export const InputChecked: MiddlewareFn<GraphQLContext> = (action, next) => {
  const { context, info } = action;
  try {
    action.args = nullsAsAbsent(action.args, info.parentType.getFields()[info.fieldName]?.args ?? []);
    checkInput(action.args);
  } catch (err) {
    throw toGraphQLError(err, context, `${info.parentType.name}.${info.fieldName}`);
  }
  return next().catch((err: unknown) => {
    throw toGraphQLError(err, context, `${info.parentType.name}.${info.fieldName}`);
  });
};
