import type { MiddlewareFn } from 'type-graphql';
import { assertJsonInput, MAX_JSON_DEPTH } from '../../domain/input';
import type { GraphQLContext } from './context';
import { toGraphQLError } from './errors';

/**
 * The contract's input rules for every argument of every resolver, variables and literals alike, before it runs:
 * no NUL or unpaired surrogate in any string or key, JSON values nested at most 64 levels (plus the input objects
 * around them), dates in the years 0001–9999. Refusals are INVALID_BODY, as for every other invalid argument of a
 * GraphQL request (its arguments travel in the request body, queries' too). The field validators then apply the exact per-field rules (the same as REST's).
 */
export function checkInput(args: Record<string, unknown>): void {
  for (const name in args) assertJsonInput(args[name], name, 'INVALID_BODY', MAX_JSON_DEPTH + INPUT_OBJECT_LEVELS);
}

/** An argument's input object and a filter/input object inside it. */
const INPUT_OBJECT_LEVELS = 2;

/**
 * The middleware of every query and mutation that takes input: checkInput, then the resolver, with any error of
 * either translated as ErrorInterceptor does (errors.ts). One middleware, not the two in a row: each level of
 * type-graphql's middleware chain is two more async functions per operation.
 */
export const InputChecked: MiddlewareFn<GraphQLContext> = ({ args, context, info }, next) => {
  try {
    checkInput(args);
  } catch (err) {
    throw toGraphQLError(err, context, `${info.parentType.name}.${info.fieldName}`);
  }
  return next().catch((err: unknown) => {
    throw toGraphQLError(err, context, `${info.parentType.name}.${info.fieldName}`);
  });
};
