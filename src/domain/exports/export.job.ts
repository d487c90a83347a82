import { JOB, type ServiceJob } from '../job-map';
import type { ExportService } from './export.service';

export const exportJob: ServiceJob<{ exports: ExportService }, typeof JOB.exportBuild> = {
  name: JOB.exportBuild,
  define: ({ exports }) => ({
    // A crashed export (no heartbeat for 30 s) starts again from the first member (its temporary is swept); a failing
    // one fails its task.
    retryLimit: 2,
    expireInSeconds: 6 * 3600,
    heartbeatSeconds: 30,
    concurrency: 2,
    handler: async ({ taskId }) => {
      await exports.run(taskId);
    },
  }),
};
