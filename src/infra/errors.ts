/*
 * Failures of the service's own stores (the blob store, the database), raised by infra. They are not answers about
 * the request: work that hit one is kept and tried again. The transports map them to codes and statuses in their one
 * error table (src/http/shared/errors.ts): unavailable is 503 with Retry-After, full is 507.
 */

/** Which store failed, named in the message (as /readyz names its checks `storage` and `database`). */
export type Store = 'blob store' | 'database';

export abstract class InfraError extends Error {
  abstract readonly store: Store;
}

/** The store cannot be reached or fails on its side; retrying later may succeed. */
export class StoreUnavailableError extends InfraError {
  /** Seconds a client should wait before it retries. */
  readonly retryAfterSeconds = 5;
  constructor(
    readonly store: Store,
    opts?: { cause?: unknown },
  ) {
    super(`the ${store} is unavailable; retry later`, opts);
    this.name = 'StoreUnavailableError';
  }
}

/** The store has no space left (a full disk, a quota). */
export class StoreFullError extends InfraError {
  constructor(
    readonly store: Store,
    opts?: { cause?: unknown },
  ) {
    super(`the ${store} has no space left`, opts);
    this.name = 'StoreFullError';
  }
}

/** A blob (by hash) the store does not have. */
export class BlobNotFoundError extends InfraError {
  readonly store = 'blob store';
  constructor(readonly hash: string) {
    super(`blob ${hash} not found`);
    this.name = 'BlobNotFoundError';
  }
}

/** Unavailable or full: a failure of a store of this service, not of the request (see isOwnStoreFailure). */
export const isStoreFailure = (e: unknown): e is StoreUnavailableError | StoreFullError =>
  e instanceof StoreUnavailableError || e instanceof StoreFullError;

/** Node's codes for a peer that cannot be reached, or a connection lost or timed out (any store's client). */
export const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * What a client library's failure may carry, at any depth of its chain of causes (AWS SDK, pg, Prisma's adapter).
 * `someCause` walks that chain (at most `depth` links) and answers whether `test` holds for one of them.
 */
export interface CauseFields {
  code?: unknown;
  name?: unknown;
  message?: unknown;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number };
  meta?: { driverAdapterError?: { cause?: { originalCode?: string; kind?: string; code?: string } } };
}
export function someCause<T>(
  err: unknown,
  depth: number,
  test: (o: CauseFields, e: object) => T | undefined,
): T | undefined {
  let e: unknown = err;
  for (let i = 0; i < depth && e && typeof e === 'object'; i++) {
    const found = test(e as CauseFields, e);
    if (found !== undefined) return found;
    e = (e as CauseFields).cause;
  }
  return undefined;
}
