import { getOperationAST, getVariableValues, execute, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';

/** The part of graphql-jit this uses. */
interface Jit {
  compileQuery(schema: GraphQLSchema, document: DocumentNode, operationName?: string, options?: object): CompiledQuery | ExecutionResult;
  isCompiledQuery(q: unknown): q is CompiledQuery;
}
interface CompiledQuery {
  query(root: unknown, context: unknown, variables: Record<string, unknown> | null | undefined): Promise<ExecutionResult> | ExecutionResult;
}

interface GatewayRequestContext {
  document: DocumentNode;
  operation?: OperationDefinitionNode;
  operationName?: string | null;
  request: { variables?: Record<string, unknown> };
  context: unknown;
}

/**
 * Apollo's executor hook (its `gateway` option: `load()` gives the schema and an executor) running queries as code
 * compiled once per document by graphql-jit. Apollo still parses and validates (its document cache, our limits rule);
 * the compiled query is cached on the validated document object, which Apollo's document store hands back for the
 * same query text. Variables are coerced by graphql-js first, so a bad variable is refused with graphql-js's exact
 * error. Mutations (uploads among them) run on graphql-js's `execute`.
 */
export function compiledExecutorGateway(schema: GraphQLSchema, jit: Jit) {
  const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery | ExecutionResult>>();
  const compile = (document: DocumentNode, operationName: string | undefined) => {
    let byName = compiled.get(document);
    if (!byName) compiled.set(document, (byName = new Map()));
    const key = operationName ?? '';
    let q = byName.get(key);
    if (!q) byName.set(key, (q = jit.compileQuery(schema, document, operationName, { disablingCapturingStackErrors: true })));
    return q;
  };
  const executor = async (rc: GatewayRequestContext): Promise<ExecutionResult> => {
    const operationName = rc.operationName ?? undefined;
    const operation = rc.operation ?? getOperationAST(rc.document, operationName);
    const variables = rc.request.variables;
    const byGraphqlJs = () => execute({ schema, document: rc.document, contextValue: rc.context, variableValues: variables, operationName });
    if (!operation || operation.operation !== 'query') {
      return byGraphqlJs();
    }
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {}, { maxErrors: 50 });
    if (coerced.errors) return { errors: coerced.errors };
    // A null variable can reach an argument of non-null type that has a default (validation allows it); graphql-js
    // answers a field error there and graphql-jit does not, so such requests take graphql-js's path.
    for (const k in coerced.coerced) {
      if (coerced.coerced[k] === null) return byGraphqlJs();
    }
    const q = compile(rc.document, operationName);
    if (!jit.isCompiledQuery(q)) return q;
    try {
      // The coerced values: graphql-jit 0.8.9 refuses a non-null variable left to its default ($l: Int! = 20).
      return await q.query(undefined, rc.context, coerced.coerced);
    } catch {
      // graphql-jit throws where graphql-js answers with a field error (a null variable for a non-null argument
      // with a default): graphql-js then gives its exact answer. Queries only, so running again changes nothing.
      return byGraphqlJs();
    }
  };
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
