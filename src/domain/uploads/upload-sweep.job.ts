import type { Logger } from '../../infra/logger';
import { countingHandler, type Job } from '../../infra/queue';
import type { UploadService } from './upload.service';

export const UPLOAD_SWEEP_JOB = 'uploads.sweep-expired';

export const uploadSweepJob: Job<{ uploads: UploadService; logger: Logger }> = {
  name: UPLOAD_SWEEP_JOB,
  define: ({ uploads, logger }) => ({
    cron: '*/10 * * * *',
    handler: countingHandler(logger, 'removed expired uploads', () => uploads.sweepExpired()),
  }),
};
