/*
 * Failures of the service's own stores (the blob store, the database), raised by infra. They are not answers about
 * the request: work that hit one is kept and tried again. The transports map them to codes and statuses in their one
 * error table (src/http/shared/errors.ts): unavailable is 503 with Retry-After, full is 507.
 */

/** Which store failed: named in the message and by /readyz's checks (`storage`, `database`). */
export type Store = 'blob store' | 'database';

export abstract class InfraError extends Error {
  abstract readonly store: Store;
}

/** The store cannot be reached or fails on its side; retrying later may succeed. */
export abstract class StoreUnavailable extends InfraError {
  /** Seconds a client should wait before it retries. */
  readonly retryAfterSeconds = 5;
}

/** The store has no space left (a full disk, a quota). */
export abstract class StoreFull extends InfraError {}

export class BlobStoreUnavailableError extends StoreUnavailable {
  readonly store = 'blob store';
  constructor(opts?: { cause?: unknown }) {
    super('the blob store is unavailable; retry later', opts);
    this.name = 'BlobStoreUnavailableError';
  }
}

export class BlobStoreFullError extends StoreFull {
  readonly store = 'blob store';
  constructor(opts?: { cause?: unknown }) {
    super('the blob store has no space left', opts);
    this.name = 'BlobStoreFullError';
  }
}

export class DatabaseUnavailableError extends StoreUnavailable {
  readonly store = 'database';
  constructor(opts?: { cause?: unknown }) {
    super('the database is unavailable; retry later', opts);
    this.name = 'DatabaseUnavailableError';
  }
}

export class DatabaseFullError extends StoreFull {
  readonly store = 'database';
  constructor(opts?: { cause?: unknown }) {
    super('the database has no space left', opts);
    this.name = 'DatabaseFullError';
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
export const isStoreFailure = (e: unknown): e is StoreUnavailable | StoreFull =>
  e instanceof StoreUnavailable || e instanceof StoreFull;
