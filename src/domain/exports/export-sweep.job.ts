import type { Logger } from '../../infra/logger';
import { countingHandler, type Job } from '../../infra/queue';
import type { ExportService } from './export.service';

export const exportSweepJob: Job<{ exports: ExportService; logger: Logger }> = {
  name: 'exports.sweep-expired',
  define: ({ exports, logger }) => ({
    cron: '*/10 * * * *',
    handler: countingHandler(logger, 'removed expired export archives', () => exports.sweepExpired()),
  }),
};
