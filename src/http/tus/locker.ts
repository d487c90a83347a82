import { MemoryLocker, type Lock, type Locker } from '@tus/server';
import {
  UploadLeaseLostError,
  UploadLockedError,
  type UploadLease,
  type UploadLeases,
} from '../../domain/uploads/upload-lease';
import { requestContext } from './request-context';

/**
 * tus's lock on an upload: its in-process MemoryLocker (which asks a local holder to wrap up), then the upload's lease
 * in PostgreSQL, so two instances never write the same upload at once. Busy for too long: 423 (tus clients retry).
 */
export class UploadLocker implements Locker {
  private readonly local = new MemoryLocker({ acquireLockTimeout: 90_000 });

  constructor(private readonly leases: UploadLeases) {}

  newLock(id: string): Lock {
    const local = this.local.newLock(id);
    const leases = this.leases;
    const ctx = requestContext.getStore();
    let lease: UploadLease | undefined;
    return {
      async lock(signal, requestRelease) {
        // tus's signal for this request: it aborts once the lock is to be let go (or the client failed).
        if (ctx?.body) ctx.body.stop = signal;
        await local.lock(signal, requestRelease);
        try {
          lease = await leases.acquire(id, {
            ownerId: ctx?.principal.ownerId,
            signal,
            onReleaseRequested: () => void requestRelease(),
          });
        } catch (err) {
          await local.unlock();
          throw err instanceof UploadLockedError ? BUSY : err;
        }
        if (ctx) ctx.lease = lease;
      },
      async unlock() {
        try {
          // A write still running records its offset on the lease (see TusRequestContext.writing).
          if (ctx?.writing) await ctx.writing;
          await lease?.release();
        } catch (err) {
          // The lease lapsed and another request took the upload: this one's offset was not recorded.
          throw err instanceof UploadLeaseLostError ? BUSY : err;
        } finally {
          if (ctx && ctx.lease === lease) ctx.lease = undefined;
          await local.unlock();
        }
      },
    };
  }
}

const BUSY = { status_code: 423, body: 'The upload is busy with another request; retry\n' };
