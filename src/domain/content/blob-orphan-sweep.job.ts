import type { Logger } from '../../infra/logger';
import { JOB, type ServiceJob } from '../job-map';
import type { ContentService } from './content.service';

/** Blobs a day old that no content row names: younger ones may be uploads between their copy and their commit. */
const ORPHAN_AGE_MS = 24 * 3600 * 1000;

/**
 * Moves orphan blobs aside, then reviews the quarantine: blobs a row names again go back, those past
 * ORPHAN_RETENTION_DAYS that no row names are removed for good (ContentService.reviewQuarantine).
 */
export const blobOrphanSweepJob: ServiceJob<{ content: ContentService; logger: Logger }, typeof JOB.blobOrphanSweep> = {
  name: JOB.blobOrphanSweep,
  define: ({ content, logger }) => ({
    // Daily: it lists every blob (one LIST request per 1,000 on S3).
    cron: '41 3 * * *',
    expireInSeconds: 6 * 3600,
    handler: async () => {
      const quarantined = await content.sweepOrphanBlobs(ORPHAN_AGE_MS);
      const { restored, removed } = await content.reviewQuarantine();
      if (quarantined + restored + removed > 0)
        logger.info('swept blobs without content rows', { quarantined, restored, removed });
    },
  }),
};
