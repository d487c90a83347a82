import type { BlobStore } from '../../infra/blob-store/blob-store';
import type { Logger } from '../../infra/logger';
import { countingHandler, type Job } from '../../infra/queue';

/** Temporaries and partial files a day old are leftovers (of crashes, or of uploads nobody finished). */
export const blobTempSweepJob: Job<{ blobStore: BlobStore; logger: Logger }> = {
  name: 'blob.sweep-temps',
  define: ({ blobStore, logger }) => ({
    cron: '17 * * * *',
    handler: countingHandler(logger, 'removed stale temporary blobs', () => blobStore.sweepTemps(24 * 3600 * 1000)),
  }),
};
