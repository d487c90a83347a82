import { JOB, type ServiceJob } from '../job-map';
import type { ContentService } from './content.service';

const GC_BATCH = 1_000;

/** Collects every content whose grace period is over, a batch at a time. */
async function collectAllDue(content: ContentService): Promise<void> {
  while ((await content.collectExpired(GC_BATCH)) === GC_BATCH) {
    // a full batch: there may be more due
  }
}

/**
 * Each asset delete that orphans a content sends one job due at the end of its grace period; a worker takes them by
 * the hundred and collects every content then due in bulk (ContentService.collectExpired), so 10,000 deletions are
 * reclaimed in seconds rather than at one per second.
 */
export const contentGcJob: ServiceJob<{ content: ContentService }, typeof JOB.contentGc> = {
  name: JOB.contentGc,
  define: ({ content }) => ({
    batchSize: 500,
    handleBatch: () => collectAllDue(content),
    handler: async () => collectAllDue(content),
  }),
};

/** The same collection every quarter hour, for contents whose job was lost. */
export const contentGcSweepJob: ServiceJob<{ content: ContentService }, typeof JOB.contentGcSweep> = {
  name: JOB.contentGcSweep,
  define: ({ content }) => ({
    cron: '*/15 * * * *',
    handler: () => collectAllDue(content),
  }),
};
