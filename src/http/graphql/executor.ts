import {
  execute,
  getVariableValues,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';

/** The part of graphql-jit this uses. */
export interface Jit {
  compileQuery(
    schema: GraphQLSchema,
    document: DocumentNode,
    operationName?: string,
    options?: object,
  ): CompiledQuery | ExecutionResult;
  isCompiledQuery(q: unknown): q is CompiledQuery;
}
export interface CompiledQuery {
  query(
    root: unknown,
    context: unknown,
    variables: Record<string, unknown> | null | undefined,
  ): Promise<ExecutionResult> | ExecutionResult;
}

interface GatewayRequestContext {
  document: DocumentNode;
  operation?: OperationDefinitionNode;
  request: { variables?: Record<string, unknown>; operationName?: string };
  context: unknown;
}

/**
 * Apollo's executor hook (its `gateway` option: `load()` gives the schema and an executor) running queries as code
 * compiled by graphql-jit, once per document object (Apollo's document store hands back the same object for the same
 * text). Apollo still parses and validates (its document cache, our limits rule). Variables are coerced by graphql-js
 * first, so a bad variable is refused with graphql-js's exact error. Mutations (uploads among them) run on
 * graphql-js's `execute`.
 */
export class JitExecutor {
  private readonly byDocument = new WeakMap<DocumentNode, Map<string, CompiledQuery | ExecutionResult>>();

  constructor(
    readonly schema: GraphQLSchema,
    private readonly jit: Jit,
  ) {}

  /** The operation compiled, or the errors graphql-jit refused it with. */
  compile(document: DocumentNode, operationName: string | undefined): CompiledQuery | ExecutionResult {
    let byName = this.byDocument.get(document);
    if (!byName) this.byDocument.set(document, (byName = new Map()));
    const key = operationName ?? '';
    let q = byName.get(key);
    if (!q)
      byName.set(
        key,
        (q = this.jit.compileQuery(this.schema, document, operationName, { disablingCapturingStackErrors: true })),
      );
    return q;
  }

  /** One operation Apollo has parsed, validated and resolved (its `GatewayExecutor`). */
  execute(rc: GatewayRequestContext): Promise<ExecutionResult> | ExecutionResult {
    const schema = this.schema;
    // Apollo resolved the operation from the request's operationName; when it found none (an unknown name, or
    // several operations and no name), graphql-js answers with the resolution error, which Apollo reports.
    const operation = rc.operation;
    const variables = rc.request.variables;
    const byGraphqlJs = () =>
      execute({
        schema,
        document: rc.document,
        contextValue: rc.context,
        variableValues: variables,
        operationName: rc.request.operationName,
      });
    if (!operation || operation.operation !== 'query') return byGraphqlJs();
    const coerced = coerceVariables(schema, operation, variables);
    if ('errors' in coerced) return { errors: coerced.errors };
    if (coerced.hasNull) return byGraphqlJs();
    const q = this.compile(rc.document, operation.name?.value);
    if (!this.jit.isCompiledQuery(q)) return q;
    return runOrFallBack(q, rc.context, coerced.values, byGraphqlJs);
  }

  /** The `gateway` option of ApolloServer. */
  gateway() {
    const schema = this.schema;
    // Apollo awaits what the executor returns: a query answered synchronously needs no promise of its own.
    const executor = (rc: GatewayRequestContext) => this.execute(rc) as Promise<ExecutionResult>;
    return {
      async load() {
        return { schema, executor };
      },
      onSchemaLoadOrUpdate(callback: (s: { apiSchema: GraphQLSchema; coreSupergraphSdl: string }) => void) {
        callback({ apiSchema: schema, coreSupergraphSdl: '' });
        return () => undefined;
      },
      async stop() {},
    };
  }
}

/**
 * graphql-js's coercion of the request's variables (its exact errors), which graphql-jit's compiled query is then
 * given. `hasNull`: a variable is null, which can reach an argument of non-null type that has a default (validation
 * allows it); graphql-js answers a field error there and graphql-jit does not, so such requests take graphql-js's
 * path.
 */
export function coerceVariables(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): { errors: ExecutionResult['errors'] } | { values: Record<string, unknown>; hasNull: boolean } {
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {}, { maxErrors: 50 });
  if (coerced.errors) return { errors: coerced.errors };
  let hasNull = false;
  for (const k in coerced.coerced) {
    if (coerced.coerced[k] === null) hasNull = true;
  }
  return { values: coerced.coerced, hasNull };
}

/**
 * Runs a compiled query on coerced variables (graphql-jit 0.8.9 refuses a non-null variable left to its default,
 * `$l: Int! = 20`, so it gets graphql-js's coerced values). graphql-jit throws where graphql-js answers with a field
 * error (a null variable for a non-null argument with a default): graphql-js then gives its exact answer. Queries
 * only, so running again changes nothing.
 */
function runOrFallBack(
  q: CompiledQuery,
  context: unknown,
  variables: Record<string, unknown>,
  byGraphqlJs: () => Promise<ExecutionResult> | ExecutionResult,
): Promise<ExecutionResult> | ExecutionResult {
  // Not an async function: a query answered synchronously needs no promise, an asynchronous one no second.
  let result: Promise<ExecutionResult> | ExecutionResult;
  try {
    result = q.query(undefined, context, variables);
  } catch {
    return byGraphqlJs();
  }
  return result instanceof Promise ? result.then(undefined, () => byGraphqlJs()) : result;
}
