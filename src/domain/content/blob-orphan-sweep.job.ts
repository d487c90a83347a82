import type { Logger } from '../../infra/logger';
import { countingHandler } from '../../infra/queue';
import { JOB, type ServiceJob } from '../job-map';
import type { ContentService } from './content.service';

export const blobOrphanSweepJob: ServiceJob<{ content: ContentService; logger: Logger }, typeof JOB.blobOrphanSweep> = {
  name: JOB.blobOrphanSweep,
  define: ({ content, logger }) => ({
    // Daily: it lists every blob (one LIST request per 1,000 on S3).
    cron: '41 3 * * *',
    expireInSeconds: 6 * 3600,
    handler: countingHandler(logger, 'removed blobs without content rows', () =>
      content.sweepOrphanBlobs(24 * 3600 * 1000),
    ),
  }),
};
