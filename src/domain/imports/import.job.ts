import type { Job } from '../../infra/queue';
import type { ImportService } from './import.service';

export const IMPORT_JOB = 'imports.seed';

export const importJob: Job<{ imports: ImportService }, { taskId: string }> = {
  name: IMPORT_JOB,
  define: ({ imports }) => ({
    // The run's heartbeat, not pg-boss, decides whether an import is alive (ImportService.sweep resends the job of a
    // run whose worker died); a failure fails the task inside the job.
    retryLimit: 0,
    expireInSeconds: 24 * 3600,
    concurrency: 1,
    handler: async ({ taskId }) => {
      await imports.run(taskId);
    },
  }),
};
