import { UploadLeases } from '../../src/domain/uploads/upload-lease';
import type { UploadRecord, UploadRepository } from '../../src/domain/uploads/upload.repository';
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
