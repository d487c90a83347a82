import { GraphQLError, Kind, type GraphQLFormattedError } from 'graphql';

/**
 * The errors of GraphQL over HTTP and how they are written, as Apollo Server 5 did (its wire is the contract: the
 * codes below reach clients as `details.reason` through errors.ts's formatError). An error may carry the HTTP status
 * and headers of its answer in `extensions.http` (context.ts's UNAUTHORIZED and RATE_LIMITED do): they are taken out
 * of the error and applied to the answer.
 */

/** The status and headers an answer gets from its errors. */
export interface Head {
  status?: number;
  headers: Map<string, string>;
}

export type FormatError = (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;

/** A GraphQLError with a code and, unless it overrides them, the status (and headers) its answer gets. */
function coded(
  message: string,
  code: string,
  head: Head | undefined,
  options: { cause?: GraphQLError; extensions?: Record<string, unknown> } = {},
): GraphQLError {
  const { cause, extensions } = options;
  return new GraphQLError(message, {
    source: cause?.source,
    positions: cause?.positions,
    nodes: cause?.nodes,
    originalError: cause ? (cause.originalError ?? cause) : undefined,
    extensions: { ...(head ? { http: head } : {}), ...extensions, ...cause?.extensions, code },
  });
}

const status = (s: number, headers: Array<[string, string]> = []): Head => ({ status: s, headers: new Map(headers) });

/** A malformed request: 400 unless told otherwise. */
export const badRequest = (message: string, head: Head = status(400)): GraphQLError =>
  coded(message, 'BAD_REQUEST', head);

export const parseFailed = (e: GraphQLError) => coded(e.message, 'GRAPHQL_PARSE_FAILED', status(400), { cause: e });

export const validationFailed = (e: GraphQLError) =>
  coded(e.message, 'GRAPHQL_VALIDATION_FAILED', status(400), { cause: e });

export const operationNotResolved = (e: GraphQLError) =>
  coded(e.message, 'OPERATION_RESOLUTION_FAILURE', status(400), { cause: e });

/** Persisted queries are off; Apollo answers their extension with 200 and an uncacheable body. */
export const persistedQueryNotSupported = () =>
  coded('PersistedQueryNotSupported', 'PERSISTED_QUERY_NOT_SUPPORTED', {
    status: 200,
    headers: new Map([['cache-control', 'private, no-cache, must-revalidate']]),
  });

/** A GET may only run queries: 405, Allow: POST. */
export const onlyQueriesOverGet = (operation: string) =>
  badRequest(
    `GET requests only support query operations, not ${operation} operations`,
    status(405, [['allow', 'POST']]),
  );

/**
 * graphql-js's errors for a variable's value (variable coercion): BAD_USER_INPUT, the client's input. A result of
 * only such errors has no data, and is answered 400.
 */
export function asUserInputError(e: GraphQLError): GraphQLError {
  const node = e.nodes?.length === 1 ? e.nodes[0] : undefined;
  if (node?.kind !== Kind.VARIABLE_DEFINITION || e.extensions?.code != null) return e;
  const v = `Variable "$${node.variable.name.value}" `;
  const m = e.message;
  const isInput =
    m.startsWith(`${v}has invalid value`) ||
    m.startsWith(`${v}got invalid value `) ||
    m.startsWith(`${v}of required type `) ||
    m.startsWith(`${v}of non-null type `);
  return isInput ? coded(m, 'BAD_USER_INPUT', undefined, { cause: e }) : e;
}

/** Any thrown value as a GraphQLError (a plain Error's message gets the prefix). */
export function ensureGraphQLError(e: unknown, prefix = ''): GraphQLError {
  const error = e instanceof Error ? e : new GraphQLError('Unexpected error value: ' + String(e));
  return error instanceof GraphQLError ? error : new GraphQLError(prefix + error.message, { originalError: error });
}

/**
 * The errors as the answer writes them, through formatError, and the status and headers they ask for. An error
 * without a code is INTERNAL_SERVER_ERROR; a formatError that throws gives Apollo's masked error.
 */
export function formatErrors(
  errors: readonly unknown[],
  formatError: FormatError,
): { errors: GraphQLFormattedError[]; head: Head } {
  const head: Head = { headers: new Map() };
  const formatted = errors.map((error) => {
    try {
      const e = ensureGraphQLError(error);
      const extensions: Record<string, unknown> = {
        ...e.extensions,
        code: e.extensions.code ?? 'INTERNAL_SERVER_ERROR',
      };
      const http = extensions.http as Partial<Head> | undefined;
      if (isHead(http)) {
        if (http.status) head.status = http.status;
        for (const [k, v] of http.headers ?? []) head.headers.set(k, v);
        delete extensions.http;
      }
      return formatError({ ...e.toJSON(), extensions }, error);
    } catch {
      return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
  });
  return { errors: formatted, head };
}

function isHead(x: unknown): x is Partial<Head> {
  if (!x || typeof x !== 'object') return false;
  const h = x as Record<string, unknown>;
  return (!('status' in h) || typeof h.status === 'number') && (!('headers' in h) || h.headers instanceof Map);
}
