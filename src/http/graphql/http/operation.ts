import { getOperationAST, type ExecutionResult, type OperationDefinitionNode } from 'graphql';
import type { Metrics } from '../../../infra/metrics';
import type { GraphQLContext } from '../context';
import type { JitExecutor } from '../executor';
import type { KeptAnswers, KeptSlot } from '../kept-answers';
import type { Documents } from './documents';
import {
  asUserInputError,
  badRequest,
  ensureGraphQLError,
  formatErrors,
  onlyQueriesOverGet,
  operationNotResolved,
  persistedQueryNotSupported,
  type FormatError,
  type Head,
} from './errors';
import type { GraphQLRequest } from './request';

/** An operation's answer before its content type is chosen: the status and headers its errors ask for, the body. */
export interface OperationAnswer {
  head: Head;
  body: string | Buffer;
}

export interface OperationDeps {
  documents: Documents;
  executor: JitExecutor;
  formatError: FormatError;
  kept?: KeptAnswers;
  metrics?: Metrics;
}

/**
 * One operation of a request, after its context: the document (Documents' cache, else parsed and validated), the
 * operation it names, a kept answer or the execution (queries by graphql-jit, the rest by graphql-js: executor.ts),
 * the errors formatted. Every outcome is timed into the operation metric, labelled by the operation's name.
 */
export async function runOperation(
  deps: OperationDeps,
  request: GraphQLRequest,
  ctx: GraphQLContext,
  method: string,
): Promise<OperationAnswer> {
  const start = performance.now();
  const { answer, ok, operation } = await answerOperation(deps, request, ctx, method);
  const name = operation ? (operation.name?.value ?? undefined) : null;
  deps.metrics?.observeOperation(name, ok, (performance.now() - start) / 1000);
  return answer;
}

interface Outcome {
  answer: OperationAnswer;
  ok: boolean;
  operation?: OperationDefinitionNode;
}

async function answerOperation(
  deps: OperationDeps,
  request: GraphQLRequest,
  ctx: GraphQLContext,
  method: string,
): Promise<Outcome> {
  const refuse = (errors: readonly unknown[], operation?: OperationDefinitionNode): Outcome => {
    const { errors: formatted, head } = formatErrors(errors, deps.formatError);
    head.status ??= 500;
    return { answer: { head, body: stringify({ errors: formatted }) }, ok: false, operation };
  };
  if (request.extensions?.persistedQuery) return refuse([persistedQueryNotSupported()]);
  if (!request.query)
    return refuse([badRequest('GraphQL operations must contain a non-empty `query` or a `persistedQuery` extension.')]);
  const document = deps.documents.load(request.query);
  if (Array.isArray(document)) return refuse(document);
  const operation = getOperationAST(document, request.operationName) ?? undefined;
  if (method === 'GET' && operation && operation.operation !== 'query')
    return refuse([onlyQueriesOverGet(operation.operation)], operation);

  const kept = deps.kept;
  let slot: KeptSlot | undefined;
  if (kept && operation) {
    const found = await kept.lookup(ctx, operation, request);
    if (found && 'body' in found)
      return { answer: { head: { headers: new Map() }, body: found.body }, ok: true, operation };
    slot = found;
  }

  let result: ExecutionResult;
  try {
    result = await deps.executor.execute({
      document,
      operation,
      request: { variables: request.variables, operationName: request.operationName },
      context: ctx,
    });
  } catch (e) {
    return refuse([ensureGraphQLError(e)], operation);
  }
  // Without an operation, graphql-js's execution answers why none was found (an unknown name, several and no name).
  if (!operation) {
    const first = result.errors?.[0];
    return refuse([first ? operationNotResolved(first) : new Error('no operation and no error')]);
  }
  if (result.errors === undefined) {
    let body: string | Buffer = stringify(result);
    if (slot && kept && result.data != null && result.extensions === undefined) body = kept.keep(slot, body);
    return { answer: { head: { headers: new Map() }, body }, ok: true, operation };
  }
  const { errors, head } = formatErrors(result.errors.map(asUserInputError), deps.formatError);
  // Errors and no data: the variables were refused, the client's input.
  if (errors.length > 0 && result.data === undefined && !head.status) head.status = 400;
  const body = stringify({ errors, data: result.data, extensions: result.extensions });
  return { answer: { head, body }, ok: errors.length === 0, operation };
}

/** The body of an answer: errors, data, extensions, in that order, and a newline. */
export function stringify(result: { errors?: unknown; data?: unknown; extensions?: unknown }): string {
  return JSON.stringify({ errors: result.errors, data: result.data, extensions: result.extensions }) + '\n';
}
