import { Readable } from 'node:stream';
import { UploadLeases, type UploadLease } from '../../src/domain/uploads/upload-lease';
import type { UploadRecord, UploadRepository } from '../../src/domain/uploads/upload.repository';
import type { UploadService } from '../../src/domain/uploads/upload.service';
import { UploadDataStore } from '../../src/http/tus/data-store';
import { UploadLocker } from '../../src/http/tus/locker';
import { requestContext, type TusRequestContext } from '../../src/http/tus/request-context';
import type { Logger } from '../../src/infra/logger';

const record = { id: 'u1', ownerId: 'o', length: 10, offset: 0 } as unknown as UploadRecord;
const logger = { warn: () => undefined, info: () => undefined, error: () => undefined } as unknown as Logger;

/** A repository whose renewals answer `renewal` (true: asked to release; false: still held; undefined: lost). */
function repoRenewing(renewal: boolean | undefined): UploadRepository {
  return {
    lease: async () => record,
    renewLease: async () => renewal,
    requestRelease: async () => undefined,
    releaseLease: async () => undefined,
    releaseLeaseAtOffset: async () => true,
  } as unknown as UploadRepository;
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an upload lease while its request runs', () => {
  test.each([
    ['asked to release by another request', true, true],
    ['lost (lapsed and taken by another request)', undefined, true],
    ['still held', false, false],
  ])('renewal %s: the holder is told to wrap up (renewal answered %s, told: %s)', async (_what, renewal, told) => {
    const leases = new UploadLeases(repoRenewing(renewal), logger, { leaseMs: 200, renewMs: 10, waitMs: 1000 });
    let wrapUp = 0;
    const lease = await leases.acquire('u1', { onReleaseRequested: () => wrapUp++ });
    await tick(60);
    await lease!.release();
    expect(wrapUp > 0).toBe(told);
  });
});

// tus's writeToStore rejects as soon as its stream pipeline fails (a request whose body breaks), while the data
// store's write is still storing what came; tus then unlocks. The offset the write records must go out with the
// lease's release, or the part holds bytes its row does not acknowledge.
test("tus's unlock waits for the data store's write, so the offset it records goes out with the lease", async () => {
  const released: { offset?: number }[] = [];
  const repo = {
    lease: async () => record,
    renewLease: async () => false,
    requestRelease: async () => undefined,
    releaseLease: async () => void released.push({}),
    releaseLeaseAtOffset: async (_id: string, _token: string, offset: number) => {
      released.push({ offset });
      return true;
    },
  } as unknown as UploadRepository;
  const leases = new UploadLeases(repo, logger, { leaseMs: 10_000, renewMs: 5_000, waitMs: 1000 });
  // The store's write: 11 bytes reach the part 50 ms after tus has given up on the request.
  const uploads = {
    leases,
    append: async (_id: string, _offset: number, _src: unknown, lease?: UploadLease) => {
      await tick(50);
      lease?.recordOffset(11);
      throw new Error('the upload failed: the body broke');
    },
  } as unknown as UploadService;
  const store = new UploadDataStore(uploads);
  const locker = new UploadLocker(leases);
  const ctx = { principal: { ownerId: 'o' }, baseUrl: 'http://127.0.0.1' } as unknown as TusRequestContext;
  await requestContext.run(ctx, async () => {
    const lock = locker.newLock('u1');
    await lock.lock(new AbortController().signal, async () => undefined);
    const writing = store.write(Readable.from([]), 'u1', 0).catch(() => 'failed');
    await tick(5); // tus's pipeline has rejected: its finally unlocks now
    await lock.unlock();
    expect(await writing).toBe('failed');
  });
  expect(released).toEqual([{ offset: 11 }]);
});
