import { JOB, type ServiceJob } from '../job-map';
import type { ImportService } from './import.service';

export const importJob: ServiceJob<{ imports: ImportService }, typeof JOB.importSeed> = {
  name: JOB.importSeed,
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

/**
 * Every minute, on one instance: resends the job of an import whose worker died (its heartbeat is stale). A schedule
 * rather than a timer per process, so a deployment of many instances sweeps once.
 */
export const importSweepJob: ServiceJob<{ imports: ImportService }, typeof JOB.importSweep> = {
  name: JOB.importSweep,
  define: ({ imports }) => ({
    cron: '* * * * *',
    handler: () => imports.sweep(),
  }),
};
