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
