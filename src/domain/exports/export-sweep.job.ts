import type { Logger } from '../../infra/logger';
import { countingHandler } from '../../infra/queue';
import { JOB, type ServiceJob } from '../job-map';
import type { ExportService } from './export.service';

export const exportSweepJob: ServiceJob<{ exports: ExportService; logger: Logger }, typeof JOB.exportSweep> = {
  name: JOB.exportSweep,
  define: ({ exports, logger }) => ({
    cron: '*/10 * * * *',
    handler: countingHandler(logger, 'removed expired export archives', () => exports.sweepExpired()),
  }),
};
