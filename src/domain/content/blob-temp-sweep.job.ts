import type { BlobStore } from '../../infra/blob-store/blob-store';
import type { Logger } from '../../infra/logger';
import { countingHandler, type Job } from '../../infra/queue';

export const BLOB_TEMP_SWEEP_JOB = 'blob.sweep-temps';

/** Temporaries and partial files a day old are leftovers (of crashes, or of uploads nobody finished). */
export const blobTempSweepJob: Job<{ blobStore: BlobStore; logger: Logger }> = {
  name: BLOB_TEMP_SWEEP_JOB,
  define: ({ blobStore, logger }) => ({
    cron: '17 * * * *',
    handler: countingHandler(logger, 'removed stale temporary blobs', () => blobStore.sweepTemps(24 * 3600 * 1000)),
  }),
};
