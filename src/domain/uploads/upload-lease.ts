import crypto from 'node:crypto';
import type { Logger } from '../../infra/logger';
import type { UploadRecord, UploadRepository } from './upload.repository';

/** The lease could not be had in time: another request (on any instance) works on the upload. */
export class UploadLockedError extends Error {
  constructor(readonly uploadId: string) {
    super(`upload ${uploadId} is busy with another request`);
    this.name = 'UploadLockedError';
  }
}

/**
 * The lease lapsed while its request wrote (another request took it): the offset that request reached is not recorded.
 */
export class UploadLeaseLostError extends Error {
  constructor(readonly uploadId: string) {
    super(`upload ${uploadId}: the lease lapsed before the offset could be recorded`);
    this.name = 'UploadLeaseLostError';
  }
}

export interface UploadLease {
  /** The upload as read when the lease was taken (in the same statement): current for as long as the lease is held. */
  readonly record: UploadRecord;
  /**
   * The acknowledged offset to record when the lease is let go: `release` then writes both in one statement, and
   * throws when it cannot (the offset must be recorded before it is answered).
   */
  recordOffset(offset: number): void;
  release(): Promise<void>;
}

/**
 * One request at a time per upload, across instances: a lease in the upload's row, renewed while held, that lapses
 * when its holder dies. A waiting request asks the holder to wrap up (`release_requested`), which the holder sees at
 * its next renewal: tus's "request release" between processes.
 *
 * A PATCH costs two statements: the one that takes the lease also reads the row, and the one that lets it go also
 * records the new offset.
 */
export class UploadLeases {
  constructor(
    private readonly repo: UploadRepository,
    private readonly logger: Logger,
    private readonly opts: { leaseMs: number; renewMs: number; waitMs: number } = {
      leaseMs: 10_000,
      renewMs: 2_000,
      waitMs: 90_000,
    },
  ) {}

  /**
   * Takes the lease only if it is free now (no waiting, no asking the holder, no renewal): for a caller that removes
   * the upload at once (the expiry sweep), which leaves an upload alone while a request still writes its part.
   */
  async takeIfFree(id: string): Promise<UploadRecord | undefined> {
    const got = await this.repo.lease(id, crypto.randomUUID(), this.opts.leaseMs);
    return got === 'held' || got === 'missing' ? undefined : got;
  }

  /**
   * Waits for the lease; undefined when the upload does not exist (nothing to protect), or, with `ownerId`, belongs to
   * another owner (whose requests are then never asked to wrap up).
   */
  async acquire(
    id: string,
    o: { ownerId?: string; signal?: AbortSignal; onReleaseRequested?: () => void } = {},
  ): Promise<UploadLease | undefined> {
    const token = crypto.randomUUID();
    const deadline = Date.now() + this.opts.waitMs;
    let asked = false;
    let pause = 20;
    let record: UploadRecord;
    for (;;) {
      const got = await this.repo.lease(id, token, this.opts.leaseMs, o.ownerId);
      if (got === 'missing') return undefined;
      if (got !== 'held') {
        record = got;
        break;
      }
      if (!asked) {
        await this.repo.requestRelease(id);
        asked = true;
      }
      if (o.signal?.aborted || Date.now() > deadline) throw new UploadLockedError(id);
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(500, pause * 2);
    }
    let released = false;
    let offset: number | undefined;
    const timer = setInterval(() => {
      this.repo.renewLease(id, token, this.opts.leaseMs).then(
        (requested) => {
          // `undefined`: the lease is no longer this request's (it lapsed while the database could not be reached, and
          // another request took it): wrap up as when asked, so that this one stops writing the part at once.
          if (requested !== false && !released) o.onReleaseRequested?.();
        },
        (err) => this.logger.warn('could not renew an upload lease', { upload_id: id, err }),
      );
    }, this.opts.renewMs);
    timer.unref();
    return {
      record,
      recordOffset: (n) => {
        offset = n;
      },
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        if (offset !== undefined) {
          if (!(await this.repo.releaseLeaseAtOffset(id, token, offset))) throw new UploadLeaseLostError(id);
          return;
        }
        await this.repo
          .releaseLease(id, token)
          .catch((err) => this.logger.warn('could not release an upload lease', { upload_id: id, err }));
      },
    };
  }
}
