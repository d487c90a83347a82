import type { Request, RequestHandler, Response } from 'express';
import { createHash } from 'node:crypto';
import { execute, GraphQLError, Kind, type GraphQLFormattedError, type OperationDefinitionNode } from 'graphql';
import type { Principal } from '../../domain/assets/asset.types';
import type { Metrics } from '../../infra/metrics';
import type { GraphQLContext } from './context';
import { coerceVariables, runOrFallBack, type CompiledQueries, type PreparedQuery } from './executor';
import { isPlainJsonType } from './json-body';
import { PageCache } from '../shared/page-cache';

/** Apollo's content type for a single result when the client's Accept allows JSON (runHttpQuery, negotiator). */
const APPLICATION_JSON = 'application/json; charset=utf-8';

/**
 * The Accept values the lane answers, each with the type Apollo picks for it: none, anything, or JSON (what fetch,
 * the asset browser and most GraphQL clients send). Any other value goes to Apollo, which negotiates.
 */
function contentTypeFor(accept: string | undefined): string | undefined {
  return accept === undefined || accept === '' || accept === '*/*' || accept === 'application/json'
    ? APPLICATION_JSON
    : undefined;
}

export interface CompiledLaneDeps {
  queries: CompiledQueries;
  /** Apollo's context function (context.ts): authentication, rate limits. */
  context: (args: { req: Request; res: Response }) => Promise<GraphQLContext>;
  /** Apollo's formatError (errors.ts). */
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  metrics?: Metrics;
  /**
   * The owner's rows version now (AssetService.rowsVersion): given, answers of operations that read only the owner's
   * assets are kept and sent again while it is unchanged (see `ownerAssetsOnly`).
   */
  rowsVersion?: (principal: Principal) => Promise<string>;
}

interface Match {
  prepared: PreparedQuery;
  variables: Record<string, unknown> | undefined;
  contentType: string;
  query: string;
  operationName: string | undefined;
}

const HANDED_OFF = Symbol('the GraphQL context the lane made');
type WithContext = Request & { [HANDED_OFF]?: Promise<GraphQLContext> };

/**
 * The context the lane already made for a request it handed to Apollo (authentication runs once per request: its
 * failures and rate limits count once), or undefined.
 */
export function handedOffContext(req: Request): Promise<GraphQLContext> | undefined {
  return (req as WithContext)[HANDED_OFF];
}

/**
 * A step of POST /graphql, before Apollo: a JSON request for a query whose text Apollo has already parsed, validated
 * and run (CompiledQueries.known) is answered here, straight through the compiled query, with what Apollo's pipeline
 * would answer for it: the same context (authentication, rate limits), the same variable coercion, the same error
 * formatting, status, content type, body text and operation metric. Everything else goes on to Apollo: other
 * methods and content types, batches, `extensions` (persisted queries), an Accept that needs negotiation, unknown
 * texts, and, after the context is made (and handed on, so authentication runs once), refused or null variables.
 *
 * Per request this skips what Apollo repeats for a known document: the SHA-256 of the text for its document store,
 * the header copy into a HeaderMap, the plugin hooks and their promises, three `negotiator` parses, the gateway
 * request context and the context copy (docs/benchmarks-history.md, "Third round: GraphQL at REST speed").
 * test/integration/graphql-lane.test.ts sends each request both ways and compares.
 */
export function compiledLane(deps: CompiledLaneDeps): RequestHandler {
  const { queries, metrics, rowsVersion } = deps;
  const schema = queries.schema;
  const kept = rowsVersion ? new PageCache() : undefined;

  const answer = async (req: Request, res: Response, m: Match, next: (err?: unknown) => void): Promise<void> => {
    const contextValue = deps.context({ req, res });
    let context: GraphQLContext;
    try {
      context = await contextValue;
    } catch {
      // Apollo renders a failed context (401, 429 and their headers).
      (req as WithContext)[HANDED_OFF] = contextValue;
      next();
      return;
    }
    const start = performance.now();
    const { document, operation, compiled } = m.prepared;
    const coerced = coerceVariables(schema, operation, m.variables);
    if ('errors' in coerced || coerced.hasNull) {
      (req as WithContext)[HANDED_OFF] = contextValue;
      next();
      return;
    }
    const operationName = operation.name?.value;
    // A kept answer: keyed by everything the answer is a function of besides the owner's rows (the base of its URLs
    // and their grant, which changes every window: read-grants.ts; the text, the operation, the variables), under the
    // rows version read before the execution that made it.
    let key: string | undefined;
    let version: string | undefined;
    if (kept && ownerAssetsOnly(operation)) {
      const ownerId = context.principal.ownerId;
      key = createHash('sha256')
        .update(
          JSON.stringify([
            ownerId,
            context.links.base,
            context.links.access ?? null,
            m.operationName ?? null,
            m.query,
            m.variables ?? null,
          ]),
        )
        .digest('base64');
      const entry = kept.get(key);
      try {
        version = await rowsVersion!(context.principal);
      } catch {
        // The execution below meets the same outage and answers it; nothing is kept.
        key = undefined;
      }
      if (entry && version !== undefined && entry.version === version) {
        metrics?.observeOperation(operationName, true, (performance.now() - start) / 1000);
        res.setHeader('content-type', m.contentType);
        res.statusCode = 200;
        res.setHeader('Content-Length', entry.body.length);
        res.end(entry.body);
        return;
      }
    }
    const result = await runOrFallBack(compiled, context, coerced.values, () =>
      execute({ schema, document, contextValue: context, variableValues: m.variables, operationName }),
    );
    const head: Head = { status: undefined, headers: new Map() };
    const errors = result.errors?.map(asUserInputError);
    const formatted = errors ? formatErrors(errors, head, deps.formatError) : undefined;
    if (errors?.length && result.data === undefined && !head.status) head.status = 400;
    metrics?.observeOperation(operationName, !errors?.length, (performance.now() - start) / 1000);
    if (!head.headers.has('content-type')) head.headers.set('content-type', m.contentType);
    const text = JSON.stringify({ errors: formatted, data: result.data, extensions: result.extensions }) + '\n';
    for (const [k, v] of head.headers) res.setHeader(k, v);
    res.statusCode = head.status || 200;
    if (head.headers.get('content-type') === APPLICATION_JSON) {
      // Only a whole answer is kept: no error (so no partial data), status 200, no header but the content type.
      const body =
        key !== undefined &&
        version !== undefined &&
        !errors &&
        result.data != null &&
        head.headers.size === 1 &&
        res.statusCode === 200
          ? kept!.set(key, version, text)
          : text;
      // What res.send does with this string and type on a POST (no ETag: the app turns them off), without its
      // parse of the content type (setCharset) and its freshness check (GET and HEAD only).
      res.setHeader('Content-Length', typeof body === 'string' ? Buffer.byteLength(body) : body.length);
      res.end(body);
    } else res.send(text);
  };

  return (req, res, next) => {
    const m = match(req, queries);
    if (!m) {
      next();
      return;
    }
    answer(req, res, m, next).catch(next);
  };
}

/** The request's query, if the lane answers it (the checks of Apollo's runHttpQuery that can refuse a POST pass). */
function match(req: Request, queries: CompiledQueries): Match | undefined {
  if (req.method !== 'POST' || !isPlainJsonType(req.headers['content-type'])) return undefined;
  const contentType = contentTypeFor(req.headers.accept);
  if (contentType === undefined) return undefined;
  const body = req.body as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || 'extensions' in body) return undefined;
  const { query, variables, operationName } = body as Record<string, unknown>;
  if (typeof query !== 'string') return undefined;
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables)))
    return undefined;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return undefined;
  const prepared = queries.known(query, operationName ?? undefined);
  if (!prepared) return undefined;
  return {
    prepared,
    variables: (variables ?? undefined) as Record<string, unknown> | undefined,
    contentType,
    query,
    operationName: (operationName ?? undefined) as string | undefined,
  };
}

const OWNER_ASSETS_ONLY = new WeakMap<OperationDefinitionNode, boolean>();

/**
 * Whether the operation's answer is a function of the owner's asset rows only (given its text, variables and the
 * URLs' base): a query whose every top-level selection is the field `assets`, with no directive. Below it are only
 * AssetPage and Asset fields: the page's rows and their columns (`thumbnailUrl` from `has_thumbnail`, `previewUrl`
 * from `preview_id`), and `preview`, which reads the same owner's asset (AssetService.getMany is per owner). Every
 * change of any of these rows, any column, moves the owner's rows version in its own transaction (migration
 * 20261122210000), on any instance. A field added under Asset that reads anything else must end this.
 */
function ownerAssetsOnly(operation: OperationDefinitionNode): boolean {
  let only = OWNER_ASSETS_ONLY.get(operation);
  if (only === undefined) {
    only =
      operation.operation === 'query' &&
      !operation.directives?.length &&
      operation.selectionSet.selections.length > 0 &&
      operation.selectionSet.selections.every(
        (s) => s.kind === Kind.FIELD && s.name.value === 'assets' && !s.directives?.length,
      );
    OWNER_ASSETS_ONLY.set(operation, only);
  }
  return only;
}

interface Head {
  status: number | undefined;
  headers: Map<string, string>;
}

/** Apollo's treatment of a variable's coercion error from execution (requestPipeline: UserInputError). */
function asUserInputError(e: GraphQLError): GraphQLError {
  const node = e.nodes?.length === 1 ? e.nodes[0] : undefined;
  if (node?.kind !== Kind.VARIABLE_DEFINITION || e.extensions?.code != null) return e;
  const v = `Variable "$${node.variable.name.value}" `;
  const m = e.message;
  if (!(
    m.startsWith(v + 'has invalid value') ||
    m.startsWith(v + 'got invalid value ') ||
    m.startsWith(v + 'of required type ') ||
    m.startsWith(v + 'of non-null type ')
  )) {
    return e;
  }
  return new GraphQLError(m, {
    nodes: e.nodes,
    originalError: e.originalError ?? e,
    extensions: { ...e.extensions, code: 'BAD_USER_INPUT' },
  });
}

/** Apollo's normalizeAndFormatErrors (errorNormalize.ts), stack traces off: the extensions' `http` goes to `head`. */
function formatErrors(
  errors: readonly GraphQLError[],
  head: Head,
  formatError: CompiledLaneDeps['formatError'],
): GraphQLFormattedError[] {
  return errors.map((error) => {
    try {
      return formatError(enrich(error, head), error);
    } catch {
      return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
  });
}

function enrich(maybeError: unknown, head: Head): GraphQLFormattedError {
  const error =
    maybeError instanceof GraphQLError
      ? maybeError
      : maybeError instanceof Error
        ? new GraphQLError(maybeError.message, { originalError: maybeError })
        : new GraphQLError('Unexpected error value: ' + String(maybeError));
  const extensions: Record<string, unknown> = {
    ...error.extensions,
    code: error.extensions.code ?? 'INTERNAL_SERVER_ERROR',
  };
  const http = extensions.http as { status?: unknown; headers?: unknown } | undefined;
  if (
    !!http &&
    typeof http === 'object' &&
    (!('status' in http) || typeof http.status === 'number') &&
    (!('headers' in http) || http.headers instanceof Map)
  ) {
    if (http.status) head.status = http.status as number;
    if (http.headers) for (const [k, v] of http.headers as Map<string, string>) head.headers.set(k.toLowerCase(), v);
    delete extensions.http;
  }
  return { ...error.toJSON(), extensions };
}
