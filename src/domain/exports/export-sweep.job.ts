import type { Logger } from '../../infra/logger';
import type { Job } from '../../infra/queue';
import type { ExportService } from './export.service';

export const EXPORT_SWEEP_JOB = 'exports.sweep-expired';

export const exportSweepJob: Job<{ exports: ExportService; logger: Logger }> = {
  name: EXPORT_SWEEP_JOB,
  define: ({ exports, logger }) => ({
    cron: '*/10 * * * *',
    handler: async () => {
      const n = await exports.sweepExpired();
      if (n > 0) logger.info('removed expired export archives', { count: n });
    },
  }),
};
