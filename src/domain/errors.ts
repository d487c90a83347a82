import { translateStoreError } from '../infra/blob-store/blob-store';
import { isStoreFailure } from '../infra/errors';

/** Error codes the domain raises; transports map them (REST: status table, GraphQL: extensions.code). */
export const ERROR_CODES = [
  'INVALID_REQUEST',
  'INVALID_JSON',
  'INVALID_BODY',
  'INVALID_QUERY',
  'INVALID_HASH',
  'INVALID_ID',
  'MISSING_FILE',
  'HASH_MISMATCH',
  'INVALID_PREVIEW_ID',
  'SOURCE_NOT_ALLOWED',
  'INVALID_CURSOR',
  'INVALID_TAG_FILTER',
  'INVALID_EXPORT_NAME',
  'SYSTEM_TAG_FORBIDDEN',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'QUOTA_EXCEEDED',
  'SOURCE_AUTH_REQUIRED',
  'ASSET_NOT_FOUND',
  'CONTENT_NOT_FOUND',
  'TASK_NOT_FOUND',
  'SOURCE_NOT_FOUND',
  'THUMBNAIL_NOT_FOUND',
  'EXPORT_NOT_FOUND',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'ASSET_IMMUTABLE',
  'CONTENT_CHANGED',
  'ID_CONFLICT',
  'TASK_NOT_CANCELLABLE',
  'UPLOAD_OFFSET_MISMATCH',
  'UPLOAD_EXPIRED',
  'TUS_VERSION_UNSUPPORTED',
  'UPLOAD_LOCKED',
  'PAYLOAD_TOO_LARGE',
  'RANGE_NOT_SATISFIABLE',
  'UNSUPPORTED_MEDIA_TYPE',
  'DOWNLOAD_FAILED',
  'RATE_LIMITED',
  'NOT_IMPLEMENTED',
  'REQUEST_TIMEOUT',
  'HEADERS_TOO_LARGE',
  'SERVICE_UNAVAILABLE',
  'CONTENT_UNAVAILABLE',
  'INSUFFICIENT_STORAGE',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;

/**
 * Failures of this service's own stores (the blob store or the database unreachable, a disk full: infra's errors, or
 * the domain's own 503), not answers about the request: work that hit one is kept and tried again (a download's bytes,
 * a finished upload's part).
 */
export const isOwnStoreFailure = (e: unknown): boolean =>
  isStoreFailure(e) ||
  (e instanceof DomainError && (e.code === 'SERVICE_UNAVAILABLE' || e.code === 'INSUFFICIENT_STORAGE'));

/**
 * `p`, with what the blob store threw made infra's errors (translateStoreError: a full disk, a store away); the
 * domain's own errors pass unchanged.
 */
export function storeErrors<T>(p: Promise<T>): Promise<T> {
  return p.catch((err: unknown) => {
    throw err instanceof DomainError ? err : translateStoreError(err);
  });
}

/**
 * A row with the same key exists already: a unique violation, translated by the repository that wrote the row. It
 * means a concurrent create won a race; the caller retries (and then finds the winner's row). Not a DomainError:
 * one that escapes is an INTERNAL error, as any unexpected failure.
 */
export class AlreadyExists extends Error {
  constructor(what: string, opts?: { cause?: unknown }) {
    super(`${what} exists already`, opts);
    this.name = 'AlreadyExists';
  }
}
