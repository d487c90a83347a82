import crypto from 'node:crypto';
import type http from 'node:http';
import { DomainError, type ErrorCode } from '../../domain/errors';
import { StoreFullError, StoreUnavailableError } from '../../infra/errors';
import type { Logger } from '../../infra/logger';

/*
 * Error rendering shared by every transport (REST routes, the hot-route table, GraphQL, the request guard and the
 * parser-level refusals): the code of each infra failure, the status of each domain code, the `{code, message,
 * details?}` body with its headers, and the one rule for anything else: logged with the request id, answered as
 * INTERNAL.
 */

/** The one table from domain error code to HTTP status. */
export const STATUS_OF: Record<ErrorCode, number> = {
  INVALID_REQUEST: 400,
  INVALID_JSON: 400,
  INVALID_BODY: 400,
  INVALID_QUERY: 400,
  INVALID_HASH: 400,
  INVALID_ID: 400,
  MISSING_FILE: 400,
  HASH_MISMATCH: 400,
  INVALID_PREVIEW_ID: 400,
  SOURCE_NOT_ALLOWED: 400,
  INVALID_CURSOR: 400,
  INVALID_TAG_FILTER: 400,
  INVALID_EXPORT_NAME: 400,
  SYSTEM_TAG_FORBIDDEN: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  QUOTA_EXCEEDED: 403,
  SOURCE_AUTH_REQUIRED: 403,
  ASSET_NOT_FOUND: 404,
  CONTENT_NOT_FOUND: 404,
  TASK_NOT_FOUND: 404,
  SOURCE_NOT_FOUND: 404,
  THUMBNAIL_NOT_FOUND: 404,
  EXPORT_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  ASSET_IMMUTABLE: 409,
  CONTENT_CHANGED: 409,
  ID_CONFLICT: 409,
  TASK_NOT_CANCELLABLE: 409,
  UPLOAD_OFFSET_MISMATCH: 409,
  UPLOAD_EXPIRED: 410,
  TUS_VERSION_UNSUPPORTED: 412,
  UPLOAD_LOCKED: 423,
  REQUEST_TIMEOUT: 408,
  HEADERS_TOO_LARGE: 431,
  PAYLOAD_TOO_LARGE: 413,
  RANGE_NOT_SATISFIABLE: 416,
  UNSUPPORTED_MEDIA_TYPE: 415,
  DOWNLOAD_FAILED: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  NOT_IMPLEMENTED: 501,
  SERVICE_UNAVAILABLE: 503,
  CONTENT_UNAVAILABLE: 503,
  INSUFFICIENT_STORAGE: 507,
};

/**
 * Infra's failures (src/infra/errors.ts), by class, as the client sees them: a store or the database that cannot be
 * reached is 503 with Retry-After, one that is full is 507. The message names the store; the cause stays in the logs.
 */
export function fromInfraError(err: unknown): DomainError | undefined {
  if (err instanceof StoreUnavailableError)
    return new DomainError('SERVICE_UNAVAILABLE', err.message, { retry_after: err.retryAfterSeconds });
  if (err instanceof StoreFullError) return new DomainError('INSUFFICIENT_STORAGE', err.message);
  return undefined;
}

/** A domain error as is, or an infra failure as its domain code (`fromInfraError`); else undefined. */
export const knownError = (err: unknown): DomainError | undefined =>
  err instanceof DomainError ? err : fromInfraError(err);

/** Errors raised by body parsers and other middleware, and infra's failures, translated to domain errors. */
export function toDomainError(err: unknown): DomainError | undefined {
  const known = knownError(err);
  if (known) return known;
  const e = err as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.parse.failed') return new DomainError('INVALID_JSON', 'the request body is not valid JSON');
  if (e?.type === 'entity.too.large') return new DomainError('PAYLOAD_TOO_LARGE', 'the request body is too large');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new DomainError('UNSUPPORTED_MEDIA_TYPE', e.message ?? 'unsupported encoding');
  }
  if (e?.type === 'request.aborted') return new DomainError('INVALID_BODY', 'the request was aborted');
  // The router could not percent-decode a path parameter (`/api/assets/%ZZ`): the path is bad, not a body.
  if (e?.status === 400 && e.message?.startsWith('Failed to decode param')) {
    return new DomainError('INVALID_REQUEST', 'the path is not valid percent-encoding');
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    return new DomainError('INVALID_BODY', e.message ?? 'bad request');
  }
  return undefined;
}

/** Status, extra headers and `{code, message, details?}` body of a domain error. */
export function errorResponse(err: DomainError): {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
} {
  const status = STATUS_OF[err.code] ?? 500;
  const headers: Record<string, string> = {};
  if (err.code === 'RATE_LIMITED' || err.code === 'SERVICE_UNAVAILABLE' || err.code === 'CONTENT_UNAVAILABLE')
    headers['Retry-After'] = String(err.details?.retry_after ?? 5);
  // tus 1.0: a 412 names the versions the server speaks.
  if (err.code === 'TUS_VERSION_UNSUPPORTED') headers['Tus-Version'] = '1.0.0';
  if (err.code === 'RANGE_NOT_SATISFIABLE' && typeof err.details?.size === 'number')
    headers['Content-Range'] = `bytes */${err.details.size}`;
  if (err.code === 'METHOD_NOT_ALLOWED' && Array.isArray(err.details?.allow))
    headers.Allow = (err.details.allow as string[]).join(', ');
  // A rejected upload may still be streaming in: close the connection rather than read gigabytes we will discard.
  if (status === 413 || status === 415 || status === 408 || status === 507) headers.Connection = 'close';
  return {
    status,
    headers,
    body: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) },
  };
}

/**
 * Whether the request has a body not read to its end: an error answered then (401, 429, 503 ...) closes the
 * connection rather than read the rest or keep the connection for another request. (A request without a body is
 * not `complete` yet while its handler runs synchronously, so `complete` alone would close after every 404.)
 */
export function bodyUnread(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  return hasBody && !req.complete;
}

/**
 * What to answer for any thrown value: a domain error (or a parser error, `toDomainError`) as is; anything else is
 * logged as `message` with the request id and becomes INTERNAL with that request id. The one place of this rule.
 */
export function asDomainError(
  err: unknown,
  logger: Pick<Logger, 'error'>,
  ctx: { requestId?: string; method?: string; path?: string; message?: string; fields?: Record<string, unknown> },
): DomainError {
  const known = toDomainError(err);
  if (known) return known;
  const requestId = ctx.requestId || crypto.randomUUID();
  logger.error(ctx.message ?? 'unhandled error', {
    err,
    request_id: requestId,
    method: ctx.method,
    path: ctx.path,
    ...ctx.fields,
  });
  return new DomainError('INTERNAL', 'internal error', { request_id: requestId });
}
