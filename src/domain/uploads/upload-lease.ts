import crypto from 'node:crypto';
import type { Logger } from '../../infra/logger';
import type { UploadRepository } from './upload.repository';

/** The lease could not be had in time: another request (on any instance) works on the upload. */
export class UploadLockedError extends Error {
  constructor(readonly uploadId: string) {
    super(`upload ${uploadId} is busy with another request`);
    this.name = 'UploadLockedError';
  }
}

export interface UploadLease {
  release(): Promise<void>;
}

/**
 * One request at a time per upload, across instances: a lease in the upload's row, renewed while held, that lapses
 * when its holder dies. A waiting request asks the holder to wrap up (`release_requested`), which the holder sees at
 * its next renewal: tus's "request release" between processes.
 */
export class UploadLeases {
  constructor(
    private readonly repo: UploadRepository,
    private readonly logger: Logger,
    private readonly opts: { leaseMs: number; renewMs: number; waitMs: number } = { leaseMs: 10_000, renewMs: 2_000, waitMs: 90_000 },
  ) {}

  /** Waits for the lease; undefined when the upload does not exist (nothing to protect). */
  async acquire(id: string, o: { signal?: AbortSignal; onReleaseRequested?: () => void } = {}): Promise<UploadLease | undefined> {
    const token = crypto.randomUUID();
    const deadline = Date.now() + this.opts.waitMs;
    let asked = false;
    let pause = 20;
    for (;;) {
      const got = await this.repo.tryLease(id, token, this.opts.leaseMs);
      if (got === 'missing') return undefined;
      if (got === 'acquired') break;
      if (!asked) {
        await this.repo.requestRelease(id);
        asked = true;
      }
      if (o.signal?.aborted || Date.now() > deadline) throw new UploadLockedError(id);
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(500, pause * 2);
    }
    let released = false;
    const timer = setInterval(() => {
      this.repo.renewLease(id, token, this.opts.leaseMs).then(
        (requested) => {
          if (requested && !released) o.onReleaseRequested?.();
        },
        (err) => this.logger.warn('could not renew an upload lease', { upload_id: id, err }),
      );
    }, this.opts.renewMs);
    timer.unref();
    return {
      release: async () => {
        released = true;
        clearInterval(timer);
        await this.repo.releaseLease(id, token).catch((err) => this.logger.warn('could not release an upload lease', { upload_id: id, err }));
      },
    };
  }
}
