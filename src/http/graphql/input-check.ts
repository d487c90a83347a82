import type { MiddlewareFn } from 'type-graphql';
import { assertJsonInput, MAX_JSON_DEPTH } from '../../domain/input';
import type { GraphQLContext } from './context';

/**
 * The contract's input rules for every argument of every resolver, variables and literals alike, before it runs:
 * no NUL or unpaired surrogate in any string or key, JSON values nested at most 64 levels (plus the input objects
 * around them), dates in the years 0001–9999. Refusals are INVALID_BODY, as for every other invalid argument of a
 * GraphQL request (its arguments travel in the request body, queries' too). The field validators then apply the exact per-field rules (the same as REST's).
 */
export const InputCheck: MiddlewareFn<GraphQLContext> = ({ args }, next) => {
  for (const [name, value] of Object.entries(args)) assertJsonInput(value, name, 'INVALID_BODY', MAX_JSON_DEPTH + INPUT_OBJECT_LEVELS);
  return next();
};

/** An argument's input object and a filter/input object inside it. */
const INPUT_OBJECT_LEVELS = 2;
