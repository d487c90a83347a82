import {
  execute,
  getNullableType,
  getVariableValues,
  isScalarType,
  isSpecifiedScalarType,
  typeFromAST,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLScalarType,
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

/** An operation to run: its document, the operation found in it (none when the request names none it has). */
export interface OperationRequest {
  document: DocumentNode;
  operation?: OperationDefinitionNode;
  request: { variables?: Record<string, unknown>; operationName?: string };
  context: unknown;
}

/**
 * Runs queries as code compiled by graphql-jit, once per document object (http/documents.ts hands back the same object
 * for the same text), after they were parsed and validated. Variables are coerced by graphql-js first, so a bad
 * variable is refused with graphql-js's exact error. Mutations (uploads among them) run on graphql-js's `execute`.
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

  /** One operation of a parsed and validated document. */
  execute(rc: OperationRequest): Promise<ExecutionResult> | ExecutionResult {
    const schema = this.schema;
    // The operation was resolved from the request's operationName; when none was found (an unknown name, or several
    // operations and no name), graphql-js answers with the resolution error, which the answer reports.
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
}

/**
 * graphql-js's coercion of the request's variables (its exact errors). `hasNull`: a variable is null, which can reach
 * an argument of non-null type that has a default (validation allows it); graphql-js answers a field error there and
 * graphql-jit does not, so such requests take graphql-js's path.
 */
export function coerceVariables(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): { errors: ExecutionResult['errors'] } | { values: Record<string, unknown>; hasNull: boolean } {
  const values = scalarVariablesOf(schema, operation)?.(variables);
  if (values !== undefined) return { values, hasNull: false };
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

type ScalarCoercer = (variables: Record<string, unknown> | undefined) => Record<string, unknown> | undefined;

const SCALAR_VARIABLES = new WeakMap<OperationDefinitionNode, ScalarCoercer | null>();

/**
 * The common case of coerceVariables, set up once per operation: every variable is of a built-in scalar type (ID,
 * String, Int, Float, Boolean, nullable or not) and given a value that is not null. graphql-js's coercion then gives
 * each variable its scalar's `parseValue(value)` (coerceInputValue on a leaf type), so this does exactly that, with
 * the type of each variable resolved once per operation rather than on every request (`typeFromAST`, the per-request
 * closures and error paths of coerceVariableValues). Anything else (a
 * variable missing or null, a parse that throws or gives undefined, an input object or enum type) gives undefined:
 * graphql-js coerces that request, with its exact errors. Null for operations that cannot take this path.
 */
function scalarVariablesOf(schema: GraphQLSchema, operation: OperationDefinitionNode): ScalarCoercer | undefined {
  let coercer = SCALAR_VARIABLES.get(operation);
  if (coercer === undefined) {
    coercer = scalarCoercer(schema, operation);
    SCALAR_VARIABLES.set(operation, coercer);
  }
  return coercer ?? undefined;
}

function scalarCoercer(schema: GraphQLSchema, operation: OperationDefinitionNode): ScalarCoercer | null {
  const vars: Array<{ name: string; scalar: GraphQLScalarType }> = [];
  for (const def of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, def.type);
    if (type === undefined) return null;
    const named = getNullableType(type);
    if (!isScalarType(named) || !isSpecifiedScalarType(named)) return null;
    vars.push({ name: def.variable.name.value, scalar: named });
  }
  return (variables) => {
    // As graphql-js's coerceVariableValues: a prototype-less object, keys in the order of the definitions.
    const coerced = Object.create(null) as Record<string, unknown>;
    for (const { name, scalar } of vars) {
      if (variables === undefined || !Object.prototype.hasOwnProperty.call(variables, name)) return undefined;
      const value = variables[name];
      if (value === null || value === undefined) return undefined;
      let parsed: unknown;
      try {
        parsed = scalar.parseValue(value);
      } catch {
        return undefined;
      }
      if (parsed === undefined) return undefined;
      coerced[name] = parsed;
    }
    return coerced;
  };
}
