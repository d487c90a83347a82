import type { Logger } from '../../infra/logger';
import { countingHandler, type Job } from '../../infra/queue';
import type { UploadService } from './upload.service';

export const uploadSweepJob: Job<{ uploads: UploadService; logger: Logger }> = {
  name: 'uploads.sweep-expired',
  define: ({ uploads, logger }) => ({
    cron: '*/10 * * * *',
    handler: countingHandler(logger, 'removed expired uploads', () => uploads.sweepExpired()),
  }),
};
