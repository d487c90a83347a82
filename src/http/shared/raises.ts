import type { ErrorCode } from '../../domain/errors';

const RAISED = new WeakMap<object, readonly ErrorCode[]>();

/**
 * Marks a step of the request pipeline (a middleware, a route's body parser) with the error codes it can answer, where
 * the step is written. test/integration/openapi.test.ts walks the route table and requires openapi.yaml to declare,
 * for every operation, the codes of each step its route passes: the document follows the code, not a copy of it.
 */
export function raising<F extends object>(codes: readonly ErrorCode[], step: F): F {
  RAISED.set(step, codes);
  return step;
}

/** The codes a step was marked with (none for a step that was not). */
export const codesRaisedBy = (step: unknown): readonly ErrorCode[] =>
  (typeof step === 'function' ? RAISED.get(step) : undefined) ?? [];
