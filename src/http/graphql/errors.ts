import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { ERROR_CODES, isDomainError } from '../../domain/errors';
import type { Logger } from '../../infra/logger';
import { asDomainError } from '../shared/errors';
import type { GraphQLContext } from './context';
import { uploadErrorOf } from './upload';

const CONTRACT_CODES = new Set<string>(ERROR_CODES);

/** Apollo / graphql-js codes for a request that is not a valid operation: the contract's "body fails validation". */
const INVALID_REQUEST_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

/** The messages of graphql-js's execution-time argument coercion (execution/values.ts getArgumentValues). */
const ARGUMENT_ERROR = /^Argument "[^"]+" (?:of (?:required|non-null) type |has invalid value )/;

/**
 * Resolver-level error translation (InputChecked applies it to every operation): domain errors keep their code, input
 * validation failures become INVALID_BODY, and anything else is logged with the request id and masked as INTERNAL.
 */
export function toGraphQLError(err: unknown, ctx: GraphQLContext, where: string): GraphQLError {
  const known = isDomainError(err) ? err : uploadErrorOf(err);
  if (known) {
    return new GraphQLError(known.message, {
      extensions: { code: known.code, ...(known.details ? { details: known.details } : {}) },
    });
  }
  if (err instanceof GraphQLError) {
    const code = err.extensions?.code;
    if (typeof code === 'string' && CONTRACT_CODES.has(code)) return err;
  }
  const masked = asDomainError(err, ctx.logger, {
    requestId: ctx.requestId,
    message: 'unhandled error in a GraphQL resolver',
    fields: { field: where },
  });
  return new GraphQLError(masked.message, {
    extensions: { code: masked.code, ...(masked.details ? { details: masked.details } : {}) },
  });
}

/**
 * Apollo's formatError, the last stop for every error: contract codes pass, invalid documents and variables become
 * INVALID_BODY, anything else (which the resolvers' interceptor did not see) is logged and masked as INTERNAL. Stack
 * traces are never included (includeStacktraceInErrorResponses is off).
 */
export function formatError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && CONTRACT_CODES.has(code)) return formatted;
    if (typeof code === 'string' && INVALID_REQUEST_CODES.has(code)) {
      return { ...formatted, extensions: { code: 'INVALID_BODY', details: { reason: code } } };
    }
    // Apollo gives code-less errors INTERNAL_SERVER_ERROR.
    if ((code === undefined || code === 'INTERNAL_SERVER_ERROR') && ARGUMENT_ERROR.test(formatted.message)) {
      // graphql-js checks argument values again when it executes a field (a nullable variable given `null` for an
      // argument of non-null type with a default): the client's input, not a fault.
      return { ...formatted, extensions: { code: 'INVALID_BODY', details: { reason: 'BAD_USER_INPUT' } } };
    }
    logger.error('unhandled GraphQL error', { err: error instanceof Error ? error : new Error(String(error)), code });
    return {
      message: 'internal error',
      locations: formatted.locations,
      path: formatted.path,
      extensions: { code: 'INTERNAL' },
    };
  };
}
