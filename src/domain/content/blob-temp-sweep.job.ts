import type { BlobStore } from '../../infra/blob-store/blob-store';
import type { Logger } from '../../infra/logger';
import { countingHandler } from '../../infra/queue';
import { JOB, type ServiceJob } from '../job-map';

/** Temporaries and partial files a day old are leftovers (of crashes, or of uploads nobody finished). */
export const blobTempSweepJob: ServiceJob<{ blobStore: BlobStore; logger: Logger }, typeof JOB.blobTempSweep> = {
  name: JOB.blobTempSweep,
  define: ({ blobStore, logger }) => ({
    cron: '17 * * * *',
    handler: countingHandler(logger, 'removed stale temporary blobs', () => blobStore.sweepTemps(24 * 3600 * 1000)),
  }),
};
