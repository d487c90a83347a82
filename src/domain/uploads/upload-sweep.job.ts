import type { Logger } from '../../infra/logger';
import { countingHandler } from '../../infra/queue';
import { JOB, type ServiceJob } from '../job-map';
import type { UploadService } from './upload.service';

export const uploadSweepJob: ServiceJob<{ uploads: UploadService; logger: Logger }, typeof JOB.uploadSweep> = {
  name: JOB.uploadSweep,
  define: ({ uploads, logger }) => ({
    cron: '*/10 * * * *',
    handler: countingHandler(logger, 'removed expired uploads', () => uploads.sweepExpired()),
  }),
};
